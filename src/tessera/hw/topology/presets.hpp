#pragma once
// Servers generated from stated parameters, for the cluster simulator and tests: the two FlexTopo
// evaluates on (arXiv 2411.11560, Fig. 2: an 8x RTX 4090 server and an 8x A100 server, each with
// 2 sockets) and whatever shape a scenario asks for. Each preset's parameters and their source are
// in topology_presets.cpp.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::hw {

struct ServerShape {
  std::string name;  // hostname of the generated topology
  int sockets = 2;
  int numa_per_socket = 1;
  int gpus_per_numa = 4;
  // GPUs on each NUMA node in order, for servers that attach them unevenly (DGX A100 in NPS4:
  // GPUs on half the nodes); overrides gpus_per_numa when not empty.
  std::vector<int> gpus_by_numa;
  int cores_per_numa = 32;
  int cores_per_group = 4;
  int threads_per_core = 2;
  std::int64_t memory_per_numa_bytes = 0;
  std::string gpu_model;
  std::int64_t gpu_memory_bytes = 0;
  // GPUs of one NUMA node that share a PCIe switch, in pairs ("pcie-switch" nearby edges); 0: none.
  int gpus_per_switch = 0;
  bool nvlink_all = false;  // every GPU pair linked ("nvswitch")
};

core::Result<HostTopology> generate(const ServerShape& shape);

// Named presets: "rtx4090-2s" (8x RTX 4090, 2 sockets x 1 NUMA node), "rtx4090-2s2n"
// (2 sockets x 2 NUMA nodes, 2 GPUs each), "a100-2s" (8x A100-SXM4-80GB, 2 sockets x 1 NUMA
// node, NVSwitch), "a100-2s4n" (DGX A100-like: 2 sockets x 4 NUMA nodes, GPU pairs on every
// second node, NVSwitch), "h100-2s" (DGX H100 / ND H100 v5-like: 2 sockets x 1 NUMA node x 4
// H100, NVSwitch). GPU models and memory are the GPU catalog's (gpu_spec.hpp).
const std::vector<std::string>& preset_names();
core::Result<ServerShape> preset_shape(std::string_view name);
core::Result<HostTopology> preset(std::string_view name, std::string hostname);

}  // namespace tessera::hw
