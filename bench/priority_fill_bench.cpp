// Cost of priority-fill's decisions, without a simulator behind it: the goal is a median
// under 300 ns per decision.
//   ./build/bench/tessera_priority_fill_bench
//
// BM_FillSmSets: one policy decision (each stream's SM set) for N tenants on an H100's grid,
//   half of them protected and busy. The runtime makes one when a protected tenant turns busy
//   or idle.

#include <benchmark/benchmark.h>

#include <vector>

#include "tessera/gpu/policy/fill_policy.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using namespace tessera;

void BM_FillSmSets(benchmark::State& state) {
  const auto grid = *gpu::PartitionGrid::of(*hw::find_gpu("h100"));
  std::vector<gpu::FillTenant> tenants;
  for (int i = 0; i < state.range(0); ++i) {
    tenants.push_back({.latency_critical = i % 2 == 0, .priority = i, .busy = true});
  }
  for (auto _ : state) benchmark::DoNotOptimize(gpu::fill_sm_sets(grid, 8, tenants));
}
BENCHMARK(BM_FillSmSets)->Arg(2)->Arg(4)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
