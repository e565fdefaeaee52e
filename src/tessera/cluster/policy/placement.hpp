#pragma once
// Filtering, scoring and placing a pod on the topology graph (FlexTopo's two-stage pipeline,
// arXiv 2411.11560, §3.4): a guaranteed pod's topology requirement filters nodes; a best-effort
// pod's sorts them. Pure functions of the state: no clock, no I/O.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/cluster/policy/decision_status.hpp"
#include "tessera/cluster/state/cluster_state.hpp"

namespace tessera::cluster {

// The best placement of `request` on `node` with what is free there now: a single NUMA node if one
// holds it all, else the fewest NUMA nodes of one socket, else the fewest sockets and NUMA nodes;
// within a level, the tightest fit (least left over: GPUs, then cores, then memory) so large holes
// stay whole; ties go to the lowest index. GPUs linked to each other (NVLink, NVSwitch, a shared
// PCIe switch: nearby edges) go together, from the smallest linked group that holds them. CPU
// cores come in whole core groups: in each NUMA node
// the fewest groups that cover its share (largest first, the last one the smallest that still
// covers). nullopt when the node does not hold the request at all.
std::optional<Assignment> best_assignment(const NodeState& node, const Resources& request);
// Only the affinity best_assignment would reach with `free` (per NUMA node of `topology`), without
// building the assignment: the hot path of preemption searches (allocates nothing).
std::optional<Affinity> best_affinity(const hw::HostTopology& topology,
                                      std::span<const NumaFree> free, const Resources& request);

// Whether a placement at `affinity` is acceptable for `pod`: guaranteed pods need it to satisfy
// their requirement; best-effort pods take anything.
bool acceptable(const Pod& pod, Affinity affinity);

struct NodeVerdict {
  int node = 0;
  bool fits = false;
  std::optional<Affinity> affinity;  // when it fits
  std::string reason;                // when it does not: "needs 4 GPUs on one NUMA node, has 2+2"
};

// Filter: every node in `nodes` (indices; empty = all) with whether `pod` fits there now.
std::vector<NodeVerdict> filter_nodes(const ClusterState& state, const Pod& pod,
                                      std::span<const int> nodes = {});

// Score in [0, 10] (the extender's HostPriority range) of placing `pod` on a node where it fits:
// affinity first (same NUMA 10, same socket, cross socket lower, by the TopologyScores of
// preemption.hpp), then tighter fit. Same inputs, same score.
int score_node(const ClusterState& state, const Pod& pod, int node);

struct Placement {
  int node = -1;
  Assignment assignment;
};
// Where the scheduler binds a pod without preemption. kChosen: `placement` holds it.
// kInfeasible: no node holds the pod acceptably now. kInvalid: the pod fails validate().
struct PlacementDecision {
  DecisionStatus status = DecisionStatus::kInfeasible;
  std::optional<Placement> placement;
  std::string reason;  // when nothing was chosen: what is wrong with the pod, or why no node
};
// The node and assignment for `pod`: acceptable nodes, best affinity first, then highest score,
// then lowest index.
PlacementDecision place(const ClusterState& state, const Pod& pod);

}  // namespace tessera::cluster
