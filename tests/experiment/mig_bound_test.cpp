// The MIG bound: a lone job's is its instance's create, its start and its fastest run; seven jobs
// no slice slows are held back by instances made one at a time; a slice too slow to end on in
// time counts nothing; a job every policy gives up makes no instance; two jobs to an instance
// never raise it; and no simulated run of a built-in mix, or of jobs arriving apart, finishes
// before it (nor, for a built-in mix, before the best schedule deciding at job ends, which the
// bound lies under).

#include "tessera/experiment/mig_bound.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>

#include "experiment/mig_jobs_on_gpu.hpp"
#include "tessera/experiment/internal/scenario_files.hpp"
#include "tessera/experiment/mig_studies.hpp"

namespace tessera::experiment {
namespace {

constexpr MigBoundCosts kCosts{.create_time = core::seconds(1), .start_time = core::seconds(2)};

// The job's least time over the profiles that hold it.
core::Nanos fastest(JobsOnGpu& s, const workload::BatchJob& job) {
  core::Nanos best = std::numeric_limits<core::Nanos>::max();
  for (const hw::MigProfile& p : s.geometry.profiles) {
    if (p.media_extensions || p.memory_bytes < job.memory.peak_reserved(job.iterations)) continue;
    best = std::min(best, *s.model.job_time(job, p));
  }
  return best;
}

TEST(MigBound, ALoneJobIsBoundByItsCreateStartAndFastestRun) {
  JobsOnGpu s = load_jobs_on_gpu(R"(gpu: a100-40gb
jobs:
  - {name: resnet, kind: training, model: resnet-50, batch: 64, iterations: 50}
)");
  for (const int per_instance : {1, 2}) {
    auto bound = mig_bound(s.jobs.jobs, s.geometry, s.model, kCosts, per_instance);
    ASSERT_TRUE(bound.has_value()) << bound.error().message();
    EXPECT_EQ(bound->makespan,
              kCosts.create_time + kCosts.start_time + fastest(s, *s.jobs.jobs.front()));
    EXPECT_NE(bound->binding.find("ends last"), std::string::npos) << bound->binding;
    EXPECT_NE(bound->binding.find("resnet"), std::string::npos) << bound->binding;
    EXPECT_DOUBLE_EQ(bound->jobs_per_hour, 3600.0 / core::to_seconds(bound->makespan));
  }
}

TEST(MigBound, SevenJobsNoSliceSlowsWaitForInstancesMadeOneAtATime) {
  // A fixed time per iteration on every slice: each job holds one instance for its start and
  // run, and the k-th instance is ready after k creates, so 7 instances give 7m - 28c by m.
  std::string text = "gpu: a100-40gb\njobs:\n";
  for (int i = 0; i < 7; ++i) {
    text += "  - {name: j" + std::to_string(i) +
            ", kind: custom, iterations: 20, iteration_time: 100ms, serial_fraction: 1, "
            "estimate: 1GiB, memory: {base: 1GiB}}\n";
  }
  JobsOnGpu s = load_jobs_on_gpu(text);
  auto bound = mig_bound(s.jobs.jobs, s.geometry, s.model, kCosts, 1);
  ASSERT_TRUE(bound.has_value()) << bound.error().message();
  const core::Nanos run = fastest(s, *s.jobs.jobs.front());
  EXPECT_NEAR(core::to_seconds(bound->makespan),
              core::to_seconds(kCosts.start_time + run + 4 * kCosts.create_time), 1e-6);
  EXPECT_NE(bound->binding.find("instance-time"), std::string::npos) << bound->binding;
}

TEST(MigBound, ASliceTooSlowToEndInTimeHoldsNothingForIt) {
  // Two ResNet-50 jobs hold the least memory slice-time on 1g.5gb, where each runs about seven
  // times as long as on 7g: the bound counts only the slices each job could end on, so it lies
  // above the memory slice-time on 1g.5gb, and no higher than two 3g.20gb instances made one
  // after the other take.
  JobsOnGpu s = load_jobs_on_gpu(R"(gpu: a100-40gb
jobs:
  - {name: r1, kind: training, model: resnet-50, batch: 32, iterations: 300}
  - {name: r2, kind: training, model: resnet-50, batch: 32, iterations: 300}
)");
  auto bound = mig_bound(s.jobs.jobs, s.geometry, s.model, kCosts, 1);
  ASSERT_TRUE(bound.has_value()) << bound.error().message();
  const auto on = [&](std::string_view name) {
    for (const hw::MigProfile& p : s.geometry.profiles) {
      if (p.name == name) return *s.model.job_time(*s.jobs.jobs.front(), p);
    }
    ADD_FAILURE() << "no profile " << name;
    return core::Nanos{0};
  };
  const double start = core::to_seconds(kCosts.start_time);
  const double create = core::to_seconds(kCosts.create_time);
  const double makespan = core::to_seconds(bound->makespan);
  EXPECT_GT(makespan, create + 2 * (start + core::to_seconds(on("1g.5gb"))) / 8);
  EXPECT_LE(makespan, 2 * create + start + core::to_seconds(on("3g.20gb")));
}

TEST(MigBound, NoJobAnyProfileHoldsLeavesNoBound) {
  JobsOnGpu s = load_jobs_on_gpu(R"(gpu: a100-40gb
jobs:
  - {name: huge, kind: custom, iterations: 5, iteration_time: 100ms, estimate: 60GiB,
     memory: {base: 60GiB}}
)");
  auto bound = mig_bound(s.jobs.jobs, s.geometry, s.model, kCosts, 1);
  ASSERT_TRUE(bound.has_value()) << bound.error().message();
  EXPECT_EQ(bound->makespan, 0);
  EXPECT_EQ(bound->jobs_per_hour, 0);
}

TEST(MigBound, AJobGivenUpMakesNoInstance) {
  // The first job fits no profile, so the first instance is made for the second, at 100 s.
  JobsOnGpu s = load_jobs_on_gpu(R"(gpu: a100-40gb
jobs:
  - {name: huge, kind: custom, iterations: 5, iteration_time: 100ms, estimate: 60GiB,
     memory: {base: 60GiB}}
  - {name: late, kind: training, model: resnet-50, batch: 32, iterations: 50, submit: 100s}
)");
  auto bound = mig_bound(s.jobs.jobs, s.geometry, s.model, kCosts, 1);
  ASSERT_TRUE(bound.has_value()) << bound.error().message();
  EXPECT_EQ(bound->makespan, core::seconds(100) + kCosts.create_time + kCosts.start_time +
                                 fastest(s, *s.jobs.jobs.back()));
  EXPECT_DOUBLE_EQ(bound->jobs_per_hour, 3600.0 / core::to_seconds(bound->makespan));
}

// Every built-in mix under every policy on MIG: no run finishes before its bound, nor before the
// best schedule deciding at job ends (mig_optimum), where the mix is searched; the bound lies at
// or below that schedule, and two jobs to an instance raise neither.
TEST(MigBound, NoSimulatedRunOfABuiltInMixBeatsItOrTheBestSchedule) {
  std::size_t searched = 0;
  for (const EmbeddedScenario& f : embedded_mig_files()) {
    if (f.file == "predictor.yaml") continue;  // predictor cases, not a mix
    auto mix = run_mix(f.text, std::string(f.file), {}, {});
    ASSERT_TRUE(mix.has_value()) << mix.error().message();
    EXPECT_LE(mix->shared_bound.makespan, mix->bound.makespan) << f.file;
    const bool search = mix->optimum.not_searched.empty();
    ASSERT_EQ(search, mix->shared_optimum.not_searched.empty()) << f.file;
    if (search) {
      ++searched;
      EXPECT_TRUE(mix->optimum.complete && mix->shared_optimum.complete) << f.file;
      EXPECT_LE(mix->shared_optimum.makespan, mix->optimum.makespan) << f.file;
      EXPECT_LE(mix->bound.makespan, mix->optimum.makespan) << f.file;
      EXPECT_LE(mix->shared_bound.makespan, mix->shared_optimum.makespan) << f.file;
    }
    for (const PolicyRun& r : mix->runs) {
      if (r.row == kSequentialRow) continue;  // MIG off
      const bool shares = r.row == kTimeFitShareRow || r.row == kTimeFitShareErrorRow;
      EXPECT_GE(r.result.makespan, (shares ? mix->shared_bound : mix->bound).makespan)
          << f.file << " " << r.row;
      if (search) {
        const MigOptimum& best = shares ? mix->shared_optimum : mix->optimum;
        EXPECT_GE(r.result.makespan, best.makespan) << f.file << " " << r.row;
      }
    }
  }
  EXPECT_GE(searched, 5u);  // general-3, ml-1, ml-2, the LLM mixes
}

// Jobs arriving over a minute, as in a trace (the bound's program cuts its time at each
// arrival): no run finishes before its bound either.
TEST(MigBound, NoSimulatedRunOfAnArrivingMixBeatsIt) {
  // Both bounds are the program's here (39.7 s, and 34.8 s with sharing).
  const std::string text = R"(gpu: a100-40gb
jobs:
  - {name: resnet-a, kind: training, model: resnet-50, batch: 64, iterations: 300}
  - {name: bert-a, kind: training, model: bert-base, batch: 32, iterations: 200, submit: 10s}
  - {name: resnet-b, kind: training, model: resnet-50, batch: 256, iterations: 100, submit: 10s}
  - {name: bert-b, kind: training, model: bert-base, batch: 64, iterations: 100, submit: 15s}
  - {name: qwen, kind: inference, model: qwen2-7b, batch: 4, prompt: 256, output: 256, submit: 15s}
)";
  auto mix = run_mix(text, "arriving.yaml", {}, {});
  ASSERT_TRUE(mix.has_value()) << mix.error().message();
  EXPECT_NE(mix->bound.binding.find("interval by interval"), std::string::npos);
  EXPECT_NE(mix->shared_bound.binding.find("interval by interval"), std::string::npos);
  EXPECT_LE(mix->shared_bound.makespan, mix->bound.makespan);
  for (const PolicyRun& r : mix->runs) {
    if (r.row == kSequentialRow) continue;
    const bool shares = r.row == kTimeFitShareRow || r.row == kTimeFitShareErrorRow;
    EXPECT_GE(r.result.makespan, (shares ? mix->shared_bound : mix->bound).makespan) << r.row;
  }
}

}  // namespace
}  // namespace tessera::experiment
