#pragma once
// What the topology loaders (hwloc, NCCL XML, JSON) share: reading a file, checking options,
// cutting a NUMA node's cores into core groups, and collecting GPU links so each pair is linked
// once, by its strongest link. Internal to tessera_hw.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw::detail {

// The whole file (at most core::kMaxDocumentBytes), or an error naming the path and the cause.
core::Result<std::string> read_text_file(const std::string& path);

// cores_per_group >= 1, nccl_numa_per_socket >= 0; the error names `origin`.
core::Status check_options(const TopologyOptions& options, const std::string& origin);

// A file's hostname when it does not carry one: its name without directory and extension.
std::string hostname_from_origin(const std::string& origin);

// Adds core groups to NUMA node `numa`: `cores` (each core's PU numbers, in order) cut into runs
// of `cores_per_group`; the last group holds what is left and may be smaller.
void add_core_groups(HostTopologyBuilder& builder, int numa,
                     const std::vector<std::vector<int>>& cores, int cores_per_group);

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
