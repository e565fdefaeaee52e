#pragma once
// The cluster simulator: FlexTopo's evaluation setting (arXiv 2411.11560, §5) rebuilt on the
// discrete-event engine. Two ways in:
//
//  1. run_cluster_sim: a scenario over virtual time (cluster_workload.hpp): services autoscale on
//     a diurnal curve, batch jobs fill the valleys, trace pods come and go; every pending pod is
//     placed with cluster::place, and one that does not fit and outranks someone preempts with the
//     configured method. Records every preemption, utilisation over time and pending times.
//  2. The paper's protocol, for the experiments: build_saturated_cluster fills N nodes of a preset
//     to a GPU allocation level, then run_preemption_stream sends a stream of higher-priority pods
//     at it, one at a time, each preempting (or placed directly when it fits) and bound before the
//     next. The same seed gives the same cluster and the same preemptors whatever the method
//     (common random numbers).
//
// Deterministic: virtual integer-ns time, randomness only from core::RandomStreams(seed).

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/cluster/cluster_workload.hpp"
#include "tessera/cluster/policy/preemption.hpp"
#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::sim {

// One preemption decision (or, in a stream, one preemptor that fit without one).
struct PreemptionRecord {
  core::Nanos time = 0;  // virtual time (stream: 0)
  int sequence = 0;      // position in the run's preemptor order
  std::string preemptor;
  std::string preemptor_class;
  std::int32_t priority = 0;
  cluster::Qos qos = cluster::Qos::kGuaranteed;
  cluster::TopologyRequirement requirement = cluster::TopologyRequirement::kNone;
  cluster::Resources request;
  cluster::PreemptionMethod method = cluster::PreemptionMethod::kIncremental;
  // A preemption happened: a candidate was chosen and its victims evicted. False when the pod fit
  // without one (`placed` true) or when no candidate existed (`placed` false, `reason` says why).
  bool preempted = false;
  bool placed = false;  // the preemptor was bound
  int node = -1;
  std::string node_name;
  cluster::Assignment assignment;  // where the preemptor's GPUs, core groups and memory are
  std::vector<std::string> victims;
  std::vector<std::int32_t> victim_priorities;
  int victim_gpus = 0;
  std::optional<cluster::Affinity> affinity;  // achieved by the bound preemptor
  // satisfies(affinity, requirement); false when not placed. A guaranteed preemptor that the
  // default (topology-blind) search lands on a node where its requirement cannot be met is bound
  // anyway at the affinity it gets and counted a miss: kubelet's topology manager would refuse it
  // (TopologyAffinityError) after its victims were already gone.
  bool hit = false;
  std::int64_t nodes_examined = 0;
  std::int64_t sets_evaluated = 0;
  std::string reason;
};

// ---- the paper's protocol ------------------------------------------------------------------

struct SaturationSpec {
  std::string preset = "rtx4090-2s";
  int nodes = 100;
  // Fraction of the cluster's GPUs allocated when filling stops, in (0, 1]. At 1.0 the holes the
  // drawn mix leaves are filled with the smallest GPU class until every GPU is held.
  double gpu_fill = 1.0;
  std::vector<PodClass> fill;  // the pods already running, drawn by weight
  // Fragmentation as history leaves it: after the first fill, `churn_rounds` times remove each
  // pod with probability `churn_fraction` and fill again. Each pod goes to a node drawn uniformly
  // among those where it fits acceptably, at the best assignment there.
  int churn_rounds = 3;
  double churn_fraction = 0.3;
};

// Fills a fresh cluster; the same (spec, seed), the same state. Fails naming the field when the
// preset is unknown, the mix is empty or a class cannot fit on an empty node.
core::Result<cluster::ClusterState> build_saturated_cluster(const SaturationSpec& spec,
                                                            std::uint64_t seed);

struct PreemptionStreamSpec {
  int count = 50;
  std::vector<PodClass> preemptors;  // drawn by weight (stream "preemptors"), the same per seed
  cluster::PreemptionMethod method = cluster::PreemptionMethod::kIncremental;
  cluster::PreemptionConfig config;
};

// Sends `count` preemptors at `state` one by one, applying each decision (victims evicted, the
// preemptor bound at the best assignment on the chosen node) before the next.
core::Result<std::vector<PreemptionRecord>> run_preemption_stream(cluster::ClusterState& state,
                                                                  const PreemptionStreamSpec& spec,
                                                                  std::uint64_t seed);

// ---- the scenario simulator ----------------------------------------------------------------

struct UtilisationSample {
  core::Nanos time = 0;
  double gpu = 0;  // allocated / total GPUs
  double cpu = 0;  // allocated / total cores
  int pending = 0;
};

// Per pod that waited to be bound: the workload it came from and how long it waited.
struct PendingTime {
  std::string workload;  // service or batch name, "trace"
  core::Nanos wait = 0;
  bool censored = false;  // still pending at the end; `wait` runs to the end
};

struct ClusterSimResult {
  std::string scenario;
  cluster::PreemptionMethod method = cluster::PreemptionMethod::kIncremental;
  double alpha = 0;
  std::uint64_t seed = 0;
  core::Nanos duration = 0;
  int nodes = 0;
  int total_gpus = 0;
  std::vector<PreemptionRecord> preemptions;  // decisions that were attempted
  std::vector<UtilisationSample> utilisation;
  std::vector<PendingTime> pending;
  std::int64_t pods_created = 0;
  std::int64_t pods_completed = 0;
  std::int64_t unschedulable = 0;  // pods no node of the cluster could hold even when empty
  // Guaranteed pods bound below their topology requirement (only the topology-blind default
  // places or preempts so), with or without a preemption.
  std::int64_t bound_below_requirement = 0;
  std::int64_t evictions = 0;
  std::int64_t requeued = 0;
  std::int64_t lost = 0;               // evicted and not requeued
  double evicted_gpu_hours = 0;        // GPU time the victims had run when evicted
  std::int64_t scheduling_passes = 0;  // work done, for the progress line and tests
};

struct ClusterSimSummary {
  std::int64_t preemptions = 0;  // decisions that evicted someone
  std::int64_t attempts = 0;     // decisions tried, including those that found nothing
  std::int64_t hits = 0;
  double hit_rate = 0;  // hits / preemptions (0 when none)
  double victims_per_preemption = 0;
  double evicted_gpu_hours = 0;
  double pending_p50_s = 0;
  double pending_p99_s = 0;
  double gpu_utilisation_mean = 0;
  double cpu_utilisation_mean = 0;
};
ClusterSimSummary summarize(const ClusterSimResult& r);

struct ClusterSimOptions {
  // Called as virtual time advances (at most once per utilisation sample).
  std::function<void(core::Nanos now, core::Nanos end)> progress;
};

core::Result<ClusterSimResult> run_cluster_sim(const ClusterScenario& scenario,
                                               const ClusterSimOptions& options = {});

nlohmann::json to_json(const PreemptionRecord& r);
nlohmann::json to_json(const ClusterSimResult& r);  // summary, preemptions, utilisation
// The summary table for people.
std::string summary_table(const ClusterSimResult& r);

}  // namespace tessera::sim
