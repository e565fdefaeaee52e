// The peak predictor's cost per sample: one add() (jump check and refit) and one predict(), with
// `range(0)` samples already in (the refit is linear in the history since the last jump).

#include <benchmark/benchmark.h>

#include <cstdint>

#include "tessera/mig/peak_predictor.hpp"
#include "tessera/mig/predictor_replay.hpp"

namespace {

using tessera::mig::PeakPredictor;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

void BM_PredictorAddPredict(benchmark::State& state) {
  const auto history = static_cast<std::int64_t>(state.range(0));
  const std::int64_t iterations = history + 1'000'000;
  const tessera::workload::MemoryTrajectory traj{
      .base_bytes = 4 * kGiB, .per_iteration = 0.5 * kMiB, .steps = {}, .granule_bytes = 2 * kMiB};
  const auto samples = tessera::mig::noisy_samples(traj, history + 1, 0.005, 1);
  PeakPredictor base(iterations, {});
  for (std::int64_t i = 0; i < history; ++i) {
    const auto& s = samples[static_cast<std::size_t>(i)];
    base.add(s.iteration, s.requested, s.reserved);
  }
  for (auto _ : state) {
    state.PauseTiming();
    PeakPredictor p = base;
    state.ResumeTiming();
    const auto& s = samples.back();
    p.add(s.iteration, s.requested, s.reserved);
    benchmark::DoNotOptimize(p.predict());
  }
}
BENCHMARK(BM_PredictorAddPredict)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
