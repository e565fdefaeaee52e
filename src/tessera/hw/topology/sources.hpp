#pragma once
// Where a HostTopology comes from. Every loader names the file and what is wrong in it when it
// fails (Domain::kTopology), and never aborts on bad input.
//
//   discover_host()          the live machine, through hwloc (PCI devices kept so GPUs show; a
//                            GPU's NUMA node is hwloc's locality, else sysfs numa_node)
//   load_hwloc_xml(path)     an `lstopo --of xml` export (hwloc's own XML import)
//   load_nccl_xml(path)      an NCCL_TOPO_FILE (<system><cpu numaid=… affinity=…><pci …>)
//   load_topology_json(path) tessera's own JSON (topology_json.hpp)
//   load_topology_file(path) any of the three files, chosen by content (not by extension)
//   preset(name)             a generated server (topology_presets.hpp)

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::hw {

// How core groups are cut: FlexTopo allocates CPUs in groups of `cores_per_group` physical cores
// of one NUMA node (the paper leaves the size configurable; 4 is tessera's default, ASSUMPTION).
struct TopologyOptions {
  int cores_per_group = 4;
  // NCCL XML carries NUMA nodes but no sockets: NUMA nodes are grouped into sockets of this many
  // (the NCCL files' machines: ND A100 v4 has 4 NUMA nodes on 2 sockets). 0: one socket per NUMA
  // node.
  int nccl_numa_per_socket = 0;
  // Memory of each NUMA node whose source gives none (NCCL XML; a package hwloc gives no NUMA
  // node of its own). Unset: it stays unknown, and the cluster level does not count it.
  std::optional<std::int64_t> numa_memory_bytes;
  // The kubelet's reservations: CPUs by OS number (its --reserved-cpus) and bytes by OS NUMA node
  // number (its --reserved-memory). A core with a reserved CPU goes in no core group. Only for
  // sources whose cores tessera cuts into groups (the host, hwloc or NCCL XML): tessera's JSON
  // carries its own reservations.
  std::vector<int> reserved_cpus;
  std::map<int, std::int64_t> reserved_memory_bytes;
};

core::Result<HostTopology> discover_host(const TopologyOptions& options = {});
core::Result<HostTopology> load_hwloc_xml(const std::string& path,
                                          const TopologyOptions& options = {});
core::Result<HostTopology> load_nccl_xml(const std::string& path,
                                         const TopologyOptions& options = {});
core::Result<HostTopology> load_topology_file(const std::string& path,
                                              const TopologyOptions& options = {});

// Text variants for tests and fuzzing (`origin` names the input in errors).
core::Result<HostTopology> parse_hwloc_xml(std::string_view xml, const std::string& origin,
                                           const TopologyOptions& options = {});
core::Result<HostTopology> parse_nccl_xml(std::string_view xml, const std::string& origin,
                                          const TopologyOptions& options = {});

}  // namespace tessera::hw
