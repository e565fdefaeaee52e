#pragma once
// The ResourceSlice tessera's driver publishes for its node (resource.k8s.io/v1): one pool named
// after the node, one device "gpu-N" per GPU, each shared by several claims through DRA's
// consumable capacity (KEP-5075: alpha in Kubernetes 1.34 behind the DRAConsumableCapacity
// feature gate, beta from 1.36): `allowMultipleAllocations`, and two capacities a claim consumes
// part of, `smPercent` (1-100, in steps of 1) and `memory` (bytes). A claim that does not ask for
// one of them consumes all of it, as the API defines: every share class asks for both.
//
// Attributes say what a DeviceClass or a claim may select on: the kind of device (`type`: "share"
// or "mig"), the index, UUID, model (the driver's name and tessera's catalog name), SM count, NUMA
// node, PCI bus id, PCIe root (Kubernetes' standard attribute resource.kubernetes.io/pcieRoot, for
// aligning with NICs) and whether the GPU can be split by MIG.
//
// A GPU in MIG mode is published as its partitions instead (DRA's partitionable devices, KEP-4815:
// the DRAPartitionableDevices feature gate): a counter set per GPU, `gpu-N-mig`, with one counter
// per memory slice, the compute slices and the media engines, and a device per profile and
// placement of tessera's MIG catalog, `gpu-N-mig-<profile id>-<start>`, consuming the memory
// slices it covers, its compute slices and, for a "+me" profile, the media engines. The scheduler
// then never allocates two partitions that overlap or that add up to more than the GPU has: the
// placement rules of hw::check_mig_layout, as counters. The API's rules shape the pool: a slice
// holds either devices or counter sets (at most 8), and at most 64 devices where any consumes
// counters; a pool of MIG GPUs spans several slices.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::dra {

struct SliceGpu {
  int index = 0;
  std::string uuid;
  std::string model;          // as the driver names it
  std::string catalog_model;  // tessera's catalog name; empty when not in it
  int sms = 0;                // 0: unknown (not in the catalog)
  std::int64_t memory_bytes = 0;
  int numa = -1;
  std::string pci_bus_id;
  std::string pcie_root;  // "pci0000:00"; empty when sysfs does not say
  bool mig_capable = false;
  // In MIG mode: the partitions to publish (empty: not in MIG mode, published whole as a share).
  std::vector<hw::MigProfile> mig_profiles;
};

// The node's GPUs from its topology (hwloc, or a topology file), each completed from tessera's
// GPU catalog (SMs, MIG) and its PCIe root read from sysfs under `sysfs_root` ("/sys").
std::vector<SliceGpu> slice_gpus(const hw::HostTopology& topology, const std::string& sysfs_root);

// The root complex a PCI device hangs from: the first "pciDDDD:BB" folder of the device's real
// path in sysfs (/sys/bus/pci/devices/<bus id> links into /sys/devices/pci0000:00/...), as
// Kubernetes' own device attribute helpers read it. Empty when it cannot be read.
std::string pcie_root_of(const std::string& pci_bus_id, const std::string& sysfs_root);

// The slices of `node`'s pool, all at the pool's `generation`: the counter sets of its MIG GPUs
// (if any) first, then its devices, 64 to a slice where partitions are among them (128 else).
std::vector<nlohmann::json> resource_slices(std::string_view driver, std::string_view node,
                                            std::int64_t generation,
                                            const std::vector<SliceGpu>& gpus);
// The name of slice `i` of the node's pool: "<node>-<driver>", then "-2", "-3", ...; a DNS
// subdomain as node names and driver names are.
std::string slice_name(std::string_view driver, std::string_view node, std::size_t i = 0);

// A MIG partition's device name, "gpu-N-mig-<profile id>-<start>".
std::string mig_device_name(int gpu, int profile_id, int start);

}  // namespace tessera::dra
