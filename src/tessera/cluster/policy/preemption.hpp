#pragma once
// Choosing which pods to preempt so that a higher-priority pod fits (FlexTopo, arXiv 2411.11560,
// §3.4-3.5), and the default Kubernetes behaviour it is compared with. Pure: the state in, a named
// decision out; same inputs, same decision.
//
// A candidate C is a node and a set of victims on it, each of lower priority than the preemptor,
// such that with them gone the preemptor fits there acceptably (placement.hpp: guaranteed pods at
// their required affinity; best-effort anywhere). FlexTopo scores it
//     S(C) = alpha * P(C) + (1 - alpha) * T(C)
// with T(C) the TopologyScores value of the best affinity the preemptor gets on that node once the
// victims are gone, and P(C) the priority term. The paper writes P(C) = 1 / sum of priority(C),
// whose size depends on the cluster's priority scale (Kubernetes allows 0 to 1e9, and 0 divides by
// zero), so alpha would mean nothing portable. tessera shifts priorities to start at 1:
//     P(C) = 1 / sum over v in C of (priority(v) - p_min + 1)
// with p_min the lowest priority of any pod bound in the cluster; P is in (0, 1], 1 for a single
// victim of the lowest priority, and falls with more or more important victims, as the paper's.
//
// Searches:
//   kIncremental  FlexTopo's Incremental Minimal Preemption: victim sets of size 1 on every node,
//                 then size 2, ...; stop at the first size with any candidate; best S(C) among
//                 that size.
//   kExhaustive   every victim set up to max_victims on every node; best S(C), ties to fewer
//                 victims.
//   kDefaultK8s   kube-scheduler's DefaultPreemption, blind to topology: per node, remove all
//                 lower-priority pods, then reprieve them highest priority first while the pod
//                 still fits by plain resource counts; pick the node by (lowest highest-victim
//                 priority, smallest priority sum, fewest victims, latest start), as
//                 pkg/scheduler/framework/preemption does (PDBs are not modelled).
// Every search starts at size 0: where the preemptor already fits acceptably, the candidate has no
// victims. For a best-effort preemptor, candidates that meet its topology requirement sort before
// those that do not, then by S(C). Ties everywhere end on the lowest node index, then the victims'
// pod indices.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/cluster/policy/decision_status.hpp"
#include "tessera/cluster/policy/placement.hpp"
#include "tessera/cluster/policy/preemption_method.hpp"
#include "tessera/cluster/state/cluster_state.hpp"

namespace tessera::cluster {

// T(C) per affinity the preemptor gets. The paper names the levels high/medium/low without values;
// tessera's defaults are the inverse of the measured communication penalty at each level
// (§2.2: 1.2x within a socket, 3.2x across sockets on the 4090 servers), so T is the relative
// speed the preemptor keeps: 1, 1/1.2, 1/3.2.
struct TopologyScores {
  double same_numa = 1.0;
  double same_socket = 1.0 / 1.2;
  double cross_socket = 1.0 / 3.2;
  double of(Affinity a) const;
};
// T as the inverse of measured slowdowns: `socket` within a socket across NUMA nodes, `cross`
// across sockets (both >= 1). The 4090 defaults are for_penalties(1.2, 3.2); FlexTopo's A100
// servers lose 2x across sockets (§2.2), so for_penalties(1.2, 2.0) there, if the within-socket
// penalty is taken from the 4090 measurement (the paper gives none for the A100).
TopologyScores for_penalties(double socket, double cross);

struct PreemptionConfig {
  // Weight of the priority term against topology. The default and its justification are in
  // preemption.cpp and docs/cluster.md.
  double alpha = 0.1;
  TopologyScores topology;
  // Largest victim set the searches consider (the exhaustive search is exponential in it).
  int max_victims = 4;
  // Branch and bound: skip victim sets whose best possible S(C) cannot beat the best candidate
  // found so far. Exact (the same choice either way); off, every set is evaluated, which is the
  // exhaustive baseline the paper's latency comparison (§5, Fig. 10) measures IMP against.
  bool prune = true;
  // Optional restriction to these nodes (the extender's candidate nodes); empty = all.
  std::vector<int> nodes;
  // The caller's promise that the preemptor fits acceptably on no node as the state stands (its
  // placement just failed on this state). FlexTopo's searches then start at one victim and visit
  // nodes from the lowest victim priority up (ClusterState::nodes_by_lowest_priority), stopping
  // once no node left can beat the best candidate found: the full search's choice, reading a few
  // nodes instead of all (nodes_examined and sets_evaluated count what it read). Used with
  // prune, all nodes and at least one victim allowed; ignored otherwise, and by kDefaultK8s.
  bool placement_failed = false;
};

struct PreemptionCandidate {
  int node = -1;
  std::vector<int> victims;                    // pod indices in ClusterState, ascending
  Affinity affinity = Affinity::kCrossSocket;  // what the preemptor gets once they are gone
  std::int64_t priority_sum = 0;
  double score = 0;  // S(C); 0 for kDefaultK8s
};

struct PreemptionDecision {
  // kChosen: `chosen` holds the candidate. kInfeasible: the request is valid but no node has a
  // candidate now. kInvalid: the pod or the configuration cannot be searched (nothing was).
  DecisionStatus status = DecisionStatus::kInfeasible;
  std::optional<PreemptionCandidate> chosen;
  // When nothing was chosen: what is wrong with the request (kInvalid), or why no node has a
  // candidate (kInfeasible).
  std::string reason;
  // Work done, for the experiments (deterministic, unlike wall time).
  std::int64_t nodes_examined = 0;
  std::int64_t sets_evaluated = 0;
};

// The scratch a search fills (victim lists, free counts, index sets), owned by the caller and
// kept between decisions so that a decision on a large cluster does not allocate (and fault in)
// it again. A workspace serves one decision at a time: one per thread that decides.
class PreemptionWorkspace {
 public:
  PreemptionWorkspace();
  ~PreemptionWorkspace();
  PreemptionWorkspace(PreemptionWorkspace&&) noexcept;
  PreemptionWorkspace& operator=(PreemptionWorkspace&&) noexcept;

  struct Buffers;  // defined with the search
  // Made on first use, so that a moved-from workspace can serve again.
  Buffers& buffers();

 private:
  std::unique_ptr<Buffers> buffers_;
};

PreemptionDecision preempt(const ClusterState& state, const Pod& preemptor, PreemptionMethod method,
                           const PreemptionConfig& config, PreemptionWorkspace& workspace);
// The same with a workspace of its own, allocated for this decision.
PreemptionDecision preempt(const ClusterState& state, const Pod& preemptor, PreemptionMethod method,
                           const PreemptionConfig& config);

// Every candidate the method would weigh on one node, best first (for the extender's per-node
// answer and for tests); empty when the node has none. Fails (kInvalidArgument) on what preempt
// reports as kInvalid, or a node that does not exist.
core::Result<std::vector<PreemptionCandidate>> node_candidates(const ClusterState& state,
                                                               const Pod& preemptor, int node,
                                                               PreemptionMethod method,
                                                               const PreemptionConfig& config);

}  // namespace tessera::cluster
