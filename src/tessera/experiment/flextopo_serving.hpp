#pragma once
// `tessera experiment flextopo-serving`: what FlexTopo's reviewers found missing (seed 004, major
// comment 1): the effect of the preemption method on serving, not only on the hit rate it
// optimises. A saturated 100-node cluster of 8x RTX 4090 servers scales an online LLM service up by
// `replicas` tensor-parallel replicas (2 GPUs each, one NUMA node required; guaranteed and,
// separately, best-effort) under each preemption method and alpha. Each replica then serves the
// Azure LLM code trace on the simulated RTX 4090 with the communication penalty of the placement it
// got (1x same NUMA node, 1.2x same socket, 3.2x across sockets: FlexTopo §2.2) applied to its
// all-reduces. Reports per method and alpha the hit rate, TTFT and TPOT P99 over the service's
// requests, throughput, victims per replica, and the guaranteed replicas that were refused or could
// not be placed (lost capacity). Setup and assumptions: the .cpp and docs/cluster.md.

#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/experiment/flextopo_study.hpp"

namespace tessera::experiment {

struct FlextopoServingPlan {
  int nodes = 100;
  // Server shapes (hw presets): 2 sockets x 2 NUMA nodes of 2 GPUs, where all three placement
  // levels exist, and 2 sockets x 1 NUMA node of 4 GPUs, flextopo-preemption's main setting.
  std::vector<std::string> presets{"rtx4090-2s2n", "rtx4090-2s"};
  int cycles = 10;    // fresh saturated clusters, each scaled up by `replicas`
  int replicas = 50;  // the scale-up: tp=2 replicas of the service
  std::vector<double> alphas{0.0, 0.25, 0.5, 0.75, 1.0};
  // The request stream every replica serves: every `trace_share`-th request (a round-robin load
  // balancer over that many replicas) of the first `trace_window` of the Azure code trace,
  // stretched by `trace_time_scale` (see the .cpp for the choice).
  core::Nanos trace_window = 20 * 60 * core::kNanosPerSecond;
  int trace_share = 4;
  double trace_time_scale = 1.0;
  // Requests of the window sent at once to measure a replica's saturated throughput.
  int capacity_requests = 256;
};

core::Result<FlextopoResult> run_flextopo_serving(const FlextopoOptions& options);
core::Result<FlextopoResult> run_flextopo_serving(const FlextopoOptions& options,
                                                  const FlextopoServingPlan& plan);

}  // namespace tessera::experiment
