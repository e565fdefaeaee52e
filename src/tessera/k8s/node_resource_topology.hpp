#pragma once
// A node's topology as a NodeResourceTopology object (topology.node.k8s.io/v1alpha2, the CRD of
// github.com/k8stopologyawareschedwg/noderesourcetopology-api; reference in
// ../shared/data/k8s/noderesourcetopology/NRT_REFERENCE.md), so that Kubernetes tools that read
// NRT (scheduler-plugins' NodeResourceTopologyMatch, kubectl) see what tessera's agent sees.
//
// One zone per NUMA node, named "node-<OS NUMA id>" of type "Node" as the kubelet-based exporters
// (NFD topology-updater, resource-topology-exporter) name them, each with
//   cpu             logical CPUs (hardware threads): capacity all of the zone's, allocatable those
//                   of its core groups (the kubelet's reserved CPUs, and the other threads of
//                   their cores, are in none), as Kubernetes counts "cpu"
//   memory          the NUMA node's local memory in bytes (binary-suffixed when exact: "64Gi"),
//                   allocatable less the kubelet's reserved memory; absent when the size is
//                   unknown (an NCCL topology names none), rather than claiming 0
//   nvidia.com/gpu  GPUs attached to the zone; only in zones that have some
// with available = allocatable minus what the allocation holds, and costs = the NUMA distance to
// every zone (numa_distance below).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tessera/cluster/state/node_state.hpp"
#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::k8s {

inline constexpr std::string_view kNrtApiVersion = "topology.node.k8s.io/v1alpha2";
inline constexpr std::string_view kNrtKind = "NodeResourceTopology";

// The kubelet's Topology Manager settings (its --topology-manager-policy and
// --topology-manager-scope flags). The agent cannot read them from the kubelet, so they are given;
// the defaults are the kubelet's own ("none", "container").
struct NrtOptions {
  std::string topology_manager_policy =
      "none";  // none | best-effort | restricted | single-numa-node
  std::string topology_manager_scope = "container";  // container | pod
};
// Fails (kK8s, kInvalidArgument) naming the field and the accepted values.
core::Status validate(const NrtOptions& options);

// The deprecated v1alpha2 topologyPolicies value for a policy and scope, as NFD's topology-updater
// derives it (pkg/topologypolicy DetectTopologyPolicy): "SingleNUMANodeContainerLevel",
// "RestrictedPodLevel", "BestEffortContainerLevel", "None", ...
std::string topology_policy(const NrtOptions& options);

// Distance between NUMA nodes i and j (indices into the topology's NUMA list) in ACPI SLIT units:
// the firmware's (topology.numa_distances()) when the source gave them, else 10 to itself, 12
// within a socket, 21 across sockets. See the .cpp for where each comes from.
std::int64_t numa_distance(const hw::HostTopology& topology, int i, int j);

// Kubernetes quantity strings: a plain count ("8"), and bytes with the largest binary suffix that
// divides them exactly ("64Gi", "1536Mi", "1000").
std::string count_quantity(std::int64_t n);
std::string bytes_quantity(std::int64_t bytes);
// A size in bytes as a flag gives it: a plain number of bytes or a Kubernetes quantity ("64Gi",
// "1.5G"), rounded up to whole bytes; more than 0 and less than 2^63. Errors name `what`
// ("--numa-memory").
core::Result<std::int64_t> parse_bytes(std::string_view text, std::string_view what);

// Checks a Kubernetes object name (an RFC 1123 DNS subdomain: lowercase alphanumerics, '-' and
// '.', at most 253 characters), naming what is wrong.
core::Status validate_object_name(std::string_view name);

// The NRT object of `topology` named `node_name`; with `allocation` (whose topology must be
// `topology`), available is what the allocation leaves free, else it equals allocatable.
core::Result<nlohmann::json> node_resource_topology(const hw::HostTopology& topology,
                                                    std::string_view node_name,
                                                    const cluster::NodeState* allocation,
                                                    const NrtOptions& options = {});
// The same for a node of a cluster state: its name, topology and allocation.
core::Result<nlohmann::json> node_resource_topology(const cluster::NodeState& node,
                                                    const NrtOptions& options = {});

// Any JSON value as a YAML document (block style, keys in the JSON's order). Strings YAML would
// read back as something else ("8", "true", "null", "") are double-quoted, so loading the YAML
// gives the same JSON.
std::string to_yaml(const nlohmann::json& value);

}  // namespace tessera::k8s
