// The FlexTopo experiments, one entry each (no self-registration). A new one is an entry here and
// its run function.

#include "tessera/experiment/flextopo_preemption.hpp"
#include "tessera/experiment/flextopo_serving.hpp"
#include "tessera/experiment/flextopo_study.hpp"

namespace tessera::experiment {

const std::vector<FlextopoExperiment>& flextopo_experiments() {
  static const std::vector<FlextopoExperiment> list = [] {
    const FlextopoStudyInfo preemption = flextopo_preemption_info();
    return std::vector<FlextopoExperiment>{
        {.name = preemption.name,
         .paper = preemption.paper,
         .figure = "§5, Table 4 (hit rate, victims, candidate sourcing)",
         .run = [](const FlextopoOptions& o) { return run_flextopo_preemption(o); }},
        {.name = "flextopo-serving",
         .paper = "FlexTopo (Zhang et al., arXiv 2411.11560)",
         .figure = "reviewers' major 1: TTFT/TPOT P99 and throughput per method and alpha",
         .run = [](const FlextopoOptions& o) { return run_flextopo_serving(o); }},
    };
  }();
  return list;
}

const FlextopoExperiment* find_flextopo_experiment(std::string_view name) {
  for (const auto& e : flextopo_experiments()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace tessera::experiment
