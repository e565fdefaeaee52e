#pragma once
// The ResourceSlice tessera's driver publishes for its node (resource.k8s.io/v1): one pool named
// after the node, one device "gpu-N" per GPU, each shared by several claims through DRA's
// consumable capacity (KEP-5075: alpha in Kubernetes 1.34 behind the DRAConsumableCapacity
// feature gate, beta from 1.36): `allowMultipleAllocations`, and two capacities a claim consumes
// part of, `smPercent` (1-100, in steps of 1) and `memory` (bytes). A claim that does not ask for
// one of them consumes all of it, as the API defines: every share class asks for both.
//
// Attributes say what a DeviceClass or a claim may select on: the index, UUID, model (the
// driver's name and tessera's catalog name), SM count, memory, NUMA node, PCI bus id, PCIe root
// (Kubernetes' standard attribute resource.kubernetes.io/pcieRoot, for aligning with NICs) and
// whether the GPU can be split by MIG.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
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
};

// The node's GPUs from its topology (hwloc, or a topology file), each completed from tessera's
// GPU catalog (SMs, MIG) and its PCIe root read from sysfs under `sysfs_root` ("/sys").
std::vector<SliceGpu> slice_gpus(const hw::HostTopology& topology, const std::string& sysfs_root);

// The root complex a PCI device hangs from: the first "pciDDDD:BB" folder of the device's real
// path in sysfs (/sys/bus/pci/devices/<bus id> links into /sys/devices/pci0000:00/...), as
// Kubernetes' own device attribute helpers read it. Empty when it cannot be read.
std::string pcie_root_of(const std::string& pci_bus_id, const std::string& sysfs_root);

// The slice object for `node`: its name, pool and devices. `generation` is the pool's.
nlohmann::json resource_slice(std::string_view driver, std::string_view node,
                              std::int64_t generation, const std::vector<SliceGpu>& gpus);
// The slice's name: "<node>-<driver>", a DNS subdomain as node names and driver names are.
std::string slice_name(std::string_view driver, std::string_view node);

}  // namespace tessera::dra
