// The peak predictor's cost per sample: one add() (jump check and refit) and one predict(), with
// `range(0)` samples already in (the refit keeps running sums, so it should not grow with them).
//
// The early-restart tables of docs/mig.md are counters of the BM_FalseAlarms and BM_FirstAlarm
// rows (`--benchmark_filter=Alarm`): jobs replayed through first_alarm_iteration over 100 noise
// seeds; their time is only the replays' cost.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tessera/mig/policy/peak_predictor.hpp"
#include "tessera/mig/policy/predictor_replay.hpp"

namespace {

using tessera::mig::PeakPredictor;
using tessera::mig::PredictorOptions;
using tessera::workload::MemoryStep;
using tessera::workload::MemoryTrajectory;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

void BM_PredictorAddPredict(benchmark::State& state) {
  const auto history = static_cast<std::int64_t>(state.range(0));
  const std::int64_t iterations = history + 1'000'000;
  const MemoryTrajectory traj{
      .base_bytes = 4 * kGiB, .per_iteration = 0.5 * kMiB, .steps = {}, .granule_bytes = 2 * kMiB};
  constexpr std::int64_t kRun = 32;
  const auto samples = tessera::mig::noisy_samples(traj, history + kRun, 0.005, 1);
  PeakPredictor base(iterations, {});
  for (std::int64_t i = 0; i < history; ++i) {
    const auto& s = samples[static_cast<std::size_t>(i)];
    base.add(s.iteration, s.requested, s.reserved);
  }
  // Each batch times the kRun samples after `history` on a copy of `base` (so the history grows
  // by at most kRun in it), restored with the timer paused: pausing costs more than an add().
  // Assigning over the copy keeps its vectors' capacity, so the timed add()s do not pay for
  // growing them.
  PeakPredictor p = base;
  const auto feed = [&] {
    for (std::int64_t i = history; i < history + kRun; ++i) {
      const auto& s = samples[static_cast<std::size_t>(i)];
      p.add(s.iteration, s.requested, s.reserved);
      benchmark::DoNotOptimize(p.predict());
    }
  };
  feed();
  while (state.KeepRunningBatch(kRun)) {
    state.PauseTiming();
    p = base;
    state.ResumeTiming();
    feed();
  }
}
BENCHMARK(BM_PredictorAddPredict)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000);

// The replays: 1000 iterations against a 10 GiB slice, 2 MiB allocator segments, 1% sample
// noise (the simulated device's default) over seeds 1..100.
constexpr std::int64_t kIterations = 1000;
constexpr std::int64_t kSlice = 10 * kGiB;
constexpr double kNoise = 0.01;
constexpr int kSeeds = 100;

MemoryTrajectory linear_to(std::int64_t from, std::int64_t to) {
  return {.base_bytes = from,
          .per_iteration = static_cast<double>(to - from) / (kIterations - 1),
          .steps = {},
          .granule_bytes = 2 * kMiB};
}

// range(0): the predictor (0 ours, 1 the paper's linear_only); range(1): converge_precision in
// hundredths.
PredictorOptions options(const benchmark::State& state) {
  PredictorOptions o;
  o.linear_only = state.range(0) == 1;
  o.converge_precision = static_cast<double>(state.range(1)) / 100;
  return o;
}

void count_false_alarms(benchmark::State& state, const MemoryTrajectory& traj) {
  const PredictorOptions o = options(state);
  int alarms = 0;
  for (auto _ : state) {
    alarms = 0;
    for (int seed = 1; seed <= kSeeds; ++seed) {
      alarms += tessera::mig::first_alarm_iteration(traj, kIterations, {}, kSlice, o, kNoise,
                                                    static_cast<std::uint64_t>(seed)) >= 0;
    }
  }
  state.counters["alarms_of_100"] = alarms;
}

void BM_FalseAlarms_Flat6GiB(benchmark::State& state) {
  count_false_alarms(state, linear_to(6 * kGiB, 6 * kGiB));
}
void BM_FalseAlarms_LinearTo8GiB(benchmark::State& state) {
  count_false_alarms(state, linear_to(4 * kGiB, 8 * kGiB));
}
void BM_FalseAlarms_LinearTo9GiB(benchmark::State& state) {
  count_false_alarms(state, linear_to(4 * kGiB, 9 * kGiB));
}
void BM_FalseAlarms_Flat9GiB(benchmark::State& state) {
  count_false_alarms(state, linear_to(9 * kGiB, 9 * kGiB));
}

void false_alarm_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"paper", "precision"})->ArgsProduct({{0, 1}, {10, 0}})->Iterations(1);
}
BENCHMARK(BM_FalseAlarms_Flat6GiB)->Apply(false_alarm_args);
BENCHMARK(BM_FalseAlarms_LinearTo8GiB)->Apply(false_alarm_args);
BENCHMARK(BM_FalseAlarms_LinearTo9GiB)->Apply(false_alarm_args);
BENCHMARK(BM_FalseAlarms_Flat9GiB)->Apply(false_alarm_args);

// First alarm against the out-of-memory iteration, for jobs that do not fit: without noise
// (one replay), and with 1% noise the median and latest first alarm over the seeds (1000: none)
// and how many seeds raised none before the job ran out of memory.
void first_alarm(benchmark::State& state, const MemoryTrajectory& traj, bool declared) {
  const PredictorOptions o = options(state);
  const std::vector<MemoryStep> steps = declared ? traj.steps : std::vector<MemoryStep>{};
  const std::int64_t oom = traj.first_iteration_above(kSlice, kIterations);
  std::int64_t exact = 0;
  std::vector<std::int64_t> noisy;
  for (auto _ : state) {
    exact = tessera::mig::first_alarm_iteration(traj, kIterations, steps, kSlice, o, 0, 1);
    noisy.clear();
    for (int seed = 1; seed <= kSeeds; ++seed) {
      noisy.push_back(tessera::mig::first_alarm_iteration(
          traj, kIterations, steps, kSlice, o, kNoise, static_cast<std::uint64_t>(seed)));
    }
  }
  int late = 0;
  for (std::int64_t& a : noisy) {
    late += a < 0 || a >= oom;
    if (a < 0) a = kIterations;  // no alarm at all sorts last
  }
  std::ranges::sort(noisy);
  state.counters["oom_at"] = static_cast<double>(oom);
  state.counters["alarm_exact"] = static_cast<double>(exact);
  state.counters["alarm_median"] = static_cast<double>(noisy[noisy.size() / 2]);
  state.counters["alarm_latest"] = static_cast<double>(noisy.back());
  state.counters["none_before_oom"] = late;
}

MemoryTrajectory superlinear() {
  return {.base_bytes = 4 * kGiB,
          .per_iteration_squared = 8.0 * kGiB / ((kIterations - 1) * (kIterations - 1)),
          .steps = {},
          .granule_bytes = 2 * kMiB};
}
MemoryTrajectory staircase() {
  MemoryTrajectory t{.base_bytes = 4 * kGiB, .steps = {}, .granule_bytes = 2 * kMiB};
  for (std::int64_t it = 200; it < kIterations; it += 100) t.steps.push_back({it, kGiB});
  return t;
}
MemoryTrajectory one_step() {
  return {.base_bytes = 4 * kGiB, .steps = {{600, 8 * kGiB}}, .granule_bytes = 2 * kMiB};
}

void BM_FirstAlarm_Linear(benchmark::State& state) {
  MemoryTrajectory t = linear_to(4 * kGiB, 4 * kGiB);
  t.per_iteration = 8.0 * kMiB;
  first_alarm(state, t, false);
}
void BM_FirstAlarm_Superlinear(benchmark::State& state) {
  first_alarm(state, superlinear(), false);
}
void BM_FirstAlarm_Staircase(benchmark::State& state) {
  first_alarm(state, staircase(), false);
}
void BM_FirstAlarm_StepUndeclared(benchmark::State& state) {
  first_alarm(state, one_step(), false);
}
void BM_FirstAlarm_StepDeclared(benchmark::State& state) {
  first_alarm(state, one_step(), true);
}

void first_alarm_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"paper", "precision"})->ArgsProduct({{0, 1}, {10, 0}})->Iterations(1);
}
BENCHMARK(BM_FirstAlarm_Linear)->Apply(first_alarm_args);
BENCHMARK(BM_FirstAlarm_Superlinear)->Apply(first_alarm_args);
BENCHMARK(BM_FirstAlarm_Staircase)->Apply(first_alarm_args);
BENCHMARK(BM_FirstAlarm_StepUndeclared)->Apply(first_alarm_args);
BENCHMARK(BM_FirstAlarm_StepDeclared)->Apply(first_alarm_args);

}  // namespace

BENCHMARK_MAIN();
