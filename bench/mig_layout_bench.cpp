// Cost of the MIG layout policies: the goals are a layout space built (every state
// enumerated and scored) in under 10 ms and one placement decision in under 10 us.
//   ./build/bench/tessera_mig_layout_bench
//
// BM_BuildLayoutSpace/i: LayoutSpace::build for mig_catalog()[i], default profiles (all but +me).
// BM_BuildLayoutSpaceAllProfiles/i: the same with the +me profile, the largest space.
// BM_ChoosePlacement/id: one choose_placement of profile `id` (1g, 2g, 3g) in an A100-40GB
//   state holding 1g@0 and 2g@2.
// BM_PlanInstance: one plan_instance that must destroy (a 3g on a GPU whose free slices cannot
//   take it, two idle 1g in the way, a busy 2g), the planner's most expensive case.
// BM_TimeFitDecision/n: one time-fit decision (mig::schedule, Scheme::kTimeFit) with n queued
//   jobs, each timed on every profile, beside a busy 2g and two idle 1g: every fully
//   configured layout that keeps the 2g, list-scheduled in four orders.
// BM_TimeFitShareDecision/n: the same with two jobs to an instance and every pair's slowdowns:
//   each job may also join an instance's last job.

#include <benchmark/benchmark.h>

#include <set>
#include <vector>

#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/reconfig_planner.hpp"
#include "tessera/mig/policy/scheduler.hpp"

namespace {

using namespace tessera;

void BM_BuildLayoutSpace(benchmark::State& state) {
  const hw::MigGeometry& g = hw::mig_catalog()[static_cast<std::size_t>(state.range(0))];
  std::size_t states = 0;
  for (auto _ : state) {
    auto space = mig::LayoutSpace::build(g);
    states = space->size();
    benchmark::DoNotOptimize(space);
  }
  state.SetLabel(g.gpu);
  state.counters["states"] = static_cast<double>(states);
}
BENCHMARK(BM_BuildLayoutSpace)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_BuildLayoutSpaceAllProfiles(benchmark::State& state) {
  const hw::MigGeometry& g = hw::mig_catalog()[static_cast<std::size_t>(state.range(0))];
  std::vector<int> all;
  for (const auto& p : g.profiles) all.push_back(p.id);
  std::size_t states = 0;
  for (auto _ : state) {
    auto space = mig::LayoutSpace::build(g, all);
    states = space->size();
    benchmark::DoNotOptimize(space);
  }
  state.SetLabel(g.gpu);
  state.counters["states"] = static_cast<double>(states);
}
BENCHMARK(BM_BuildLayoutSpaceAllProfiles)->Arg(0)->Unit(benchmark::kMicrosecond);

const mig::LayoutSpace& a100_space() {
  static const mig::LayoutSpace space =
      *mig::LayoutSpace::build(*hw::find_mig_geometry("a100-40gb"));
  return space;
}

void BM_ChoosePlacement(benchmark::State& state) {
  const auto& space = a100_space();
  const mig::StateId s = *space.find(mig::Layout{{{19, 0}, {14, 2}}});
  const auto profile = static_cast<int>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(mig::choose_placement(space, s, profile));
  }
}
BENCHMARK(BM_ChoosePlacement)->Arg(19)->Arg(14)->Arg(9);

void BM_PlanInstance(benchmark::State& state) {
  const auto& space = a100_space();
  const mig::StateId s = *space.find(mig::Layout{{{19, 0}, {19, 1}, {14, 2}, {19, 4}, {19, 6}}});
  const std::set<mig::Placement> busy{{14, 2}};
  for (auto _ : state) {
    benchmark::DoNotOptimize(mig::plan_instance(space, s, busy, 9));
  }
}
BENCHMARK(BM_PlanInstance);

// n queued jobs, each timed on every profile, beside a busy 2g (running job n) and two idle 1g.
mig::SchedulerInput time_fit_input(std::size_t n) {
  const auto& space = a100_space();
  mig::SchedulerInput in;
  in.space = &space;
  in.scheme = mig::Scheme::kTimeFit;
  in.current = *space.find(mig::Layout{{{19, 0}, {19, 1}, {14, 2}}});
  in.busy = {{14, 2}};
  in.free_at[{14, 2}] = core::seconds(30);
  const std::vector<int> profiles{19, 15, 14, 9, 5, 0};
  for (std::size_t j = 0; j < n; ++j) {
    mig::QueuedJob q;
    q.job = j;
    q.work_class = j;
    q.name = "j";
    q.need_bytes = std::int64_t{1} << 30;
    // Times that differ by job and scale sublinearly with the slice.
    for (const int id : profiles) {
      const hw::MigProfile* p = space.geometry().find(id);
      q.times.push_back(
          {id, core::seconds(10.0 + static_cast<double>(j % 7)) * 7 / (p->compute_slices + 1)});
    }
    in.queue.push_back(q);
  }
  return in;
}

void BM_TimeFitDecision(benchmark::State& state) {
  const mig::SchedulerInput in = time_fit_input(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(mig::schedule(in));
}
BENCHMARK(BM_TimeFitDecision)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

void BM_TimeFitShareDecision(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  mig::SchedulerInput in = time_fit_input(n);
  // Two jobs to an instance, each job a work class of its own and every pair (the running job n
  // included) timed on every profile, slowed 1.1x to 1.9x.
  mig::CoRunTable table;
  for (std::size_t a = 0; a <= n; ++a) {
    for (std::size_t b = a + 1; b <= n; ++b) {
      for (const int id : {19, 15, 14, 9, 5, 0}) {
        const double s = 1.1 + 0.2 * static_cast<double>((a + b) % 5);
        table[{a, b, id}] = mig::Slowdowns{.first = s, .second = s};
      }
    }
  }
  in.jobs_per_instance = 2;
  in.co_runs = &table;
  in.running[{14, 2}] = {mig::RunningJob{.job = n,
                                         .work_class = n,
                                         .need_bytes = std::int64_t{1} << 30,
                                         .term = {.begins = 0, .work = core::seconds(30)}}};
  for (auto _ : state) benchmark::DoNotOptimize(mig::schedule(in));
}
BENCHMARK(BM_TimeFitShareDecision)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
