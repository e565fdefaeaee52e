#pragma once
// `tessera experiment flextopo-preemption`: FlexTopo's headline evaluation (arXiv 2411.11560, §5,
// Table 4) and what its reviewers asked for beside it (objection 3: variation across runs, load
// levels, hardware and workload mixes). Preemptions on a saturated cluster with three searches on
// the same clusters and the same preemptors (common random numbers): incremental minimal
// preemption (FlexTopo's IMP), exhaustive search and kube-scheduler's default preemption. Reports
// the topology-affinity hit rate with a 95% interval over cycles, victims per preemption and
// their priorities, and candidate sets evaluated per decision (the deterministic stand-in for
// decision latency; wall-clock latency is measured in bench/). Setup and assumptions: the .cpp
// and docs/cluster.md.

#include <string>

#include "tessera/core/error.hpp"
#include "tessera/experiment/flextopo_study.hpp"

namespace tessera::experiment {

// How big a run is. The defaults are the paper's protocol plus the variations.
struct FlextopoPreemptionPlan {
  int nodes = 100;                 // paper: 100 nodes
  int cycles = 100;                // paper: 100 simulation cycles
  int preemptions_per_cycle = 50;  // paper: 50 preemptions each
  // The variations (load levels, hardware, mixes, alpha): cycles each, incremental and default
  // only; 0 skips them.
  int variation_cycles = 20;
};

core::Result<FlextopoResult> run_flextopo_preemption(const FlextopoOptions& options);
core::Result<FlextopoResult> run_flextopo_preemption(const FlextopoOptions& options,
                                                     const FlextopoPreemptionPlan& plan);

struct FlextopoStudyInfo {
  std::string name;
  std::string paper;
  std::string figure;
  std::string setup;
};
FlextopoStudyInfo flextopo_preemption_info();

}  // namespace tessera::experiment
