// Cost of the bound no MIG policy can beat (experiment::mig_bound), as `tessera mig plan` and the
// mig-* experiments compute it, and of the best schedule a policy can make (mig_optimum), on the
// mig-ml mixes' ml-1 (six training jobs, A100-40GB).
//   ./build/bench/tessera_mig_bound_bench
//
// BM_MigBound/k: the bound with k (1 or 2) jobs to an instance on a model that has timed every
//   job and pair already: the relaxation itself (hulls, bisections).
// BM_MigBoundColdModel/k: the same from a new model, as `tessera mig plan` does: every job timed
//   on every profile and, with two jobs to an instance, every pair on every profile that holds
//   both, on the simulated GPU.
// BM_MigBoundProgram/n: the linear program alone (mig_bound_program.hpp) with two jobs to an
//   instance, for n jobs arriving a minute apart on an H100's six profiles, every pair allowed on
//   the three largest: how its solve grows with arriving jobs (the trace mix has 12).
// BM_MigOptimum/k: the best schedule deciding at job ends (experiment::mig_optimum) with k jobs to
//   an instance, every job and pair timed already: the branch and bound itself.

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "tessera/experiment/internal/mig_bound_program.hpp"
#include "tessera/experiment/internal/scenario_files.hpp"
#include "tessera/experiment/mig_bound.hpp"
#include "tessera/experiment/mig_optimum.hpp"
#include "tessera/experiment/mig_studies.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"

namespace {

using namespace tessera;

struct Ml1 {
  mig::JobsFile jobs;
  hw::GpuSpec spec;
  hw::MigGeometry geometry;
  experiment::MigBoundCosts costs;
};

const Ml1& ml1() {
  static const Ml1 mix = [] {
    for (const auto& f : experiment::embedded_mig_files()) {
      if (f.file != "ml-1.yaml") continue;
      Ml1 m{.jobs = *mig::parse_jobs(f.text, "ml-1.yaml"), .spec = {}, .geometry = {}, .costs = {}};
      m.spec = *hw::find_gpu(m.jobs.gpu);
      m.geometry = *hw::find_mig_geometry(m.jobs.gpu);
      m.costs = experiment::study_bound_costs();
      return m;
    }
    std::abort();  // ml-1.yaml is built in
  }();
  return mix;
}

void BM_MigBound(benchmark::State& state) {
  const Ml1& m = ml1();
  const int per_instance = static_cast<int>(state.range(0));
  sim::SliceCostModel model(m.spec, m.geometry);
  auto warm = experiment::mig_bound(m.jobs.jobs, m.geometry, model, m.costs, per_instance);
  if (!warm) state.SkipWithError(warm.error().message().c_str());
  for (auto _ : state) {
    auto bound = experiment::mig_bound(m.jobs.jobs, m.geometry, model, m.costs, per_instance);
    benchmark::DoNotOptimize(bound);
  }
}
BENCHMARK(BM_MigBound)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_MigBoundColdModel(benchmark::State& state) {
  const Ml1& m = ml1();
  const int per_instance = static_cast<int>(state.range(0));
  for (auto _ : state) {
    sim::SliceCostModel model(m.spec, m.geometry);
    auto bound = experiment::mig_bound(m.jobs.jobs, m.geometry, model, m.costs, per_instance);
    benchmark::DoNotOptimize(bound);
  }
}
BENCHMARK(BM_MigBoundColdModel)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

experiment::BoundProgram arriving_jobs(int n) {
  // H100-80GB's profiles without media extensions: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb,
  // 7g.80gb (compute slices, memory slices, instances at once).
  const int shape[6][3] = {{1, 1, 7}, {1, 2, 4}, {2, 2, 3}, {3, 4, 2}, {4, 4, 1}, {7, 8, 1}};
  experiment::BoundProgram p{.profiles = {},
                             .jobs = {},
                             .pairs = {},
                             .sharing = true,
                             .start = 2,
                             .create = 1,
                             .first_create = 0};
  for (const auto& s : shape) {
    p.profiles.push_back({.compute_slices = s[0], .memory_slices = s[1], .at_once = s[2]});
  }
  for (int j = 0; j < n; ++j) {
    // 10-40 minutes on the whole GPU, scaling with compute slices to the power 0.8.
    const double whole = 600.0 * (1 + j % 4);
    experiment::BoundJob job{.arrives = 1.0 + 60 * j, .time = {}};
    for (const auto& s : shape) job.time.emplace_back(whole * std::pow(7.0 / s[0], 0.8));
    p.jobs.push_back(std::move(job));
  }
  for (std::size_t a = 0; a < p.jobs.size(); ++a) {
    for (std::size_t b = a + 1; b < p.jobs.size(); ++b) {
      for (std::size_t q = 3; q < 6; ++q) {
        p.pairs.push_back(
            {.a = a, .b = b, .profile = q, .slowdown_a = 1.6 + 0.1 * (a % 3), .slowdown_b = 1.7});
      }
    }
  }
  return p;
}

void BM_MigBoundProgram(benchmark::State& state) {
  const experiment::BoundProgram p = arriving_jobs(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto least = experiment::least_admitted(p, 0);
    if (!least) state.SkipWithError("the program was not solved");
    benchmark::DoNotOptimize(least);
  }
}
BENCHMARK(BM_MigBoundProgram)->Arg(6)->Arg(12)->Arg(18)->Unit(benchmark::kMillisecond);

void BM_MigOptimum(benchmark::State& state) {
  const Ml1& m = ml1();
  const int per_instance = static_cast<int>(state.range(0));
  sim::SliceCostModel model(m.spec, m.geometry);
  auto warm = experiment::mig_optimum(m.jobs.jobs, m.geometry, model, m.costs, per_instance);
  if (!warm) state.SkipWithError(warm.error().message().c_str());
  for (auto _ : state) {
    auto best = experiment::mig_optimum(m.jobs.jobs, m.geometry, model, m.costs, per_instance);
    benchmark::DoNotOptimize(best);
  }
  state.counters["steps"] = warm ? static_cast<double>(warm->steps) : 0;
}
BENCHMARK(BM_MigOptimum)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
