// Cost of the bound no MIG policy can beat (experiment::mig_bound), as `tessera mig plan` and the
// mig-* experiments compute it, on the mig-ml mixes' ml-1 (six training jobs, A100-40GB).
//   ./build/bench/tessera_mig_bound_bench
//
// BM_MigBound/k: the bound with k (1 or 2) jobs to an instance on a model that has timed every
//   job and pair already: the relaxation itself (hulls, bisections).
// BM_MigBoundColdModel/k: the same from a new model, as `tessera mig plan` does: every job timed
//   on every profile and, with two jobs to an instance, every pair on every profile that holds
//   both, on the simulated GPU.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "tessera/experiment/internal/scenario_files.hpp"
#include "tessera/experiment/mig_bound.hpp"
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

}  // namespace

BENCHMARK_MAIN();
