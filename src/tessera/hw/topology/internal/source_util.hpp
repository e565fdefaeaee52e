#pragma once
// What the topology loaders (hwloc, NCCL XML, JSON) share: reading a file, checking options,
// cutting a NUMA node's cores into core groups, and collecting GPU links so each pair is linked
// once, by its strongest link. Internal to tessera_hw.

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw::detail {

// The whole file (at most core::kMaxDocumentBytes), or an error naming the path and the cause.
core::Result<std::string> read_text_file(const std::string& path);

// cores_per_group >= 1, nccl_numa_per_socket >= 0, a positive numa_memory_bytes, reservations
// of no negative CPU or size; the error names `origin`.
core::Status check_options(const TopologyOptions& options, const std::string& origin);

// A file's hostname when it does not carry one: its name without directory and extension.
std::string hostname_from_origin(const std::string& origin);

// Cuts each NUMA node's cores into core groups and applies the kubelet's reservations of
// TopologyOptions, remembering which CPUs and NUMA nodes the host has so that a reservation of
// one it lacks is an error rather than ignored.
class CoreGroups {
 public:
  explicit CoreGroups(const TopologyOptions& options);
  // Adds core groups to NUMA node `numa` (OS number `os_numa`, -1 when none): `cores` (each
  // core's PU numbers, in order) cut into runs of cores_per_group, the last holding what is left.
  // Cores with a reserved PU are left out and reserved on the NUMA node, with its reserved
  // memory.
  void add(HostTopologyBuilder& builder, int numa, int os_numa,
           const std::vector<std::vector<int>>& cores);
  // Fails naming a reserved CPU or NUMA node the host does not have.
  core::Status check(const std::string& origin) const;

 private:
  const TopologyOptions& options_;
  std::set<int> reserved_;
  std::set<int> cpus_seen_, numa_seen_;
};

// GPU pairs and how they are linked. A pair seen twice keeps its strongest link (nvswitch,
// nvlink, then pcie-switch): HostTopologyBuilder allows one nearby edge per pair.
class GpuLinks {
 public:
  void add(int a, int b, const std::string& via);
  void apply(HostTopologyBuilder& builder) const;

 private:
  std::map<std::pair<int, int>, std::string> links_;
};

}  // namespace tessera::hw::detail
