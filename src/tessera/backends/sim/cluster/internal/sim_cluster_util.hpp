#pragma once
// What the saturated-cluster protocol and the scenario simulator share (not a public header).

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/backends/sim/cluster/cluster_workload.hpp"
#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/cluster/policy/placement.hpp"
#include "tessera/cluster/policy/preemption.hpp"
#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/core/random.hpp"

namespace tessera::sim::detail {

// A class drawn by weight.
const PodClass& draw_class(std::span<const PodClass> classes, core::RandomStream& rng);

cluster::Pod make_pod(const PodClass& c, std::string name, std::int64_t start_seq);

// Whether `request` fits acceptably for `pod` on an empty node of `topology`.
bool fits_empty(const std::shared_ptr<const hw::HostTopology>& topology, const cluster::Pod& pod);

// The pod as the scheduler's filter sees it when placing without preemption. kDefaultK8s filters
// nodes by plain resource counts, blind to the topology requirement (kube-scheduler's
// NodeResourcesFit): the pod is seen as best-effort asking for nothing, so the node is still
// chosen by cluster::place's order and the pod gets the best assignment there, as kubelet's device
// and CPU managers would give it, but a guaranteed pod may land below its requirement.
cluster::Pod placement_view(const cluster::Pod& pod, cluster::PreemptionMethod method);
// Where the scheduler binds `pod` without preemption: cluster::place of placement_view.
cluster::PlacementDecision place_for(const cluster::ClusterState& state, const cluster::Pod& pod,
                                     cluster::PreemptionMethod method);

// A decision that found the pod or the preemption settings malformed fails the run (asking again
// would never help, so the pod would wait forever); any other decision passes.
core::Status refuse_invalid(cluster::DecisionStatus status, const cluster::Pod& pod,
                            const std::string& reason);

// Fills the record's preemptor fields.
PreemptionRecord start_record(const cluster::Pod& pod, const std::string& pod_class,
                              cluster::PreemptionMethod method);
// Records the chosen victims (name, priority, GPUs), before they are evicted.
void record_victims(const cluster::ClusterState& state, std::span<const int> victims,
                    PreemptionRecord& rec);
// Binds `pod` at `placement` and fills the record's outcome (node, assignment, affinity, hit).
core::Result<int> bind_recorded(cluster::ClusterState& state, const cluster::Pod& pod,
                                const cluster::Placement& placement, PreemptionRecord& rec);

double percentile(std::vector<double> v, double p);  // nearest rank; 0 for an empty vector

}  // namespace tessera::sim::detail
