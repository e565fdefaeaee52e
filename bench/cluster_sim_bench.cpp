// The scenario simulator (`tessera cluster-sim`) as the cluster grows: examples/cluster/
// flextopo-4090.yaml (100 rtx4090-2s nodes) scaled to 100, 1,000, 5,000 and 20,000 nodes with its
// services and batch arrivals in proportion (sim::scale_to_nodes, as `--nodes N`), 16 simulated
// hours, one run per size; the time to compare is CPU. Counters: pods created, preemption
// decisions, and the nodes those decisions examined (cluster::preempt reads every node, so that
// work grows as decisions x nodes).
//
//   build/bench/tessera_cluster_sim_bench
//   build/bench/tessera_cluster_sim_bench --benchmark_filter='nodes:(100|1000|5000)/'

#include <benchmark/benchmark.h>

#include <string>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"

namespace {

using namespace tessera;

void BM_ClusterSim(benchmark::State& state) {
  auto scenario = sim::load_cluster_scenario(std::string(TESSERA_SOURCE_DIR) +
                                             "/examples/cluster/flextopo-4090.yaml");
  if (!scenario) {
    state.SkipWithError(scenario.error().message().c_str());
    return;
  }
  auto scaled = sim::scale_to_nodes(*scenario, static_cast<int>(state.range(0)));
  if (!scaled) {
    state.SkipWithError(scaled.error().message().c_str());
    return;
  }
  scaled->duration = 16 * 3600 * core::kNanosPerSecond;
  for (auto _ : state) {
    auto result = sim::run_cluster_sim(*scaled);
    if (!result) {
      state.SkipWithError(result.error().message().c_str());
      return;
    }
    std::int64_t examined = 0;
    for (const auto& p : result->preemptions) examined += p.nodes_examined;
    state.counters["pods"] = static_cast<double>(result->pods_created);
    state.counters["decisions"] = static_cast<double>(result->preemptions.size());
    state.counters["nodes_examined"] = static_cast<double>(examined);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_ClusterSim)
    ->ArgName("nodes")
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(20000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
