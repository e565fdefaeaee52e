// The best schedule deciding at job ends: a lone job's is its create, start and fastest run; two
// jobs every slice slows run one after the other on the whole GPU; two no slice slows take two
// instances made one after the other; sharing an instance finds a shorter schedule where pairs
// gain; mixes too large or submitted apart are not searched; a search cut short says so.

#include "tessera/experiment/mig_optimum.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "experiment/mig_jobs_on_gpu.hpp"

namespace tessera::experiment {
namespace {

constexpr MigBoundCosts kCosts{.create_time = core::seconds(1),
                               .start_time = core::seconds(2),
                               .destroy_time = core::millis(500)};

core::Nanos time_on(JobsOnGpu& s, std::size_t job, std::string_view profile) {
  for (const hw::MigProfile& p : s.geometry.profiles) {
    if (p.name == profile) return *s.model.job_time(*s.jobs.jobs[job], p);
  }
  ADD_FAILURE() << "no profile " << profile;
  return 0;
}

// Two jobs side by side on one instance do more work a second than either alone.
constexpr const char* kThreeTrainingJobs = R"(gpu: a100-40gb
jobs:
  - {name: resnet, kind: training, model: resnet-50, batch: 64, iterations: 300}
  - {name: bert, kind: training, model: bert-base, batch: 32, iterations: 200}
  - {name: bert-2, kind: training, model: bert-base, batch: 64, iterations: 100}
)";

// `n` custom jobs named a, b, ...: `iterations` of 100 ms on 7 slices, of which the part
// `serial` no slice's SMs speed up; 1 GiB each.
std::string custom_jobs(int n, int iterations, double serial) {
  std::string text = "gpu: a100-40gb\njobs:\n";
  for (int i = 0; i < n; ++i) {
    text += fmt::format(
        "  - {{name: {}, kind: custom, iterations: {}, iteration_time: 100ms, "
        "serial_fraction: {}, estimate: 1GiB, memory: {{base: 1GiB}}}}\n",
        static_cast<char>('a' + i), iterations, serial);
  }
  return text;
}

MigOptimum search(JobsOnGpu& s, int per_instance, const MigOptimumLimits& limits = {}) {
  auto o = mig_optimum(s.jobs.jobs, s.geometry, s.model, kCosts, per_instance, limits);
  EXPECT_TRUE(o.has_value()) << o.error().message();
  if (!o) return {};
  EXPECT_EQ(o->not_searched, "");
  return *o;
}

TEST(MigOptimum, ALoneJobRunsOnItsFastestSliceAfterACreateAndAStart) {
  JobsOnGpu s = load_jobs_on_gpu(R"(gpu: a100-40gb
jobs:
  - {name: resnet, kind: training, model: resnet-50, batch: 64, iterations: 50}
)");
  for (const int per_instance : {1, 2}) {
    const MigOptimum o = search(s, per_instance);
    EXPECT_EQ(o.makespan, kCosts.create_time + kCosts.start_time + time_on(s, 0, "7g.40gb"));
    EXPECT_TRUE(o.complete);
    ASSERT_EQ(o.decisions.size(), 1u);
    EXPECT_EQ(o.decisions[0], "0.000 s: resnet on 7g.40gb@0 (made)");
    EXPECT_DOUBLE_EQ(o.jobs_per_hour, 3600.0 / core::to_seconds(o.makespan));
  }
}

TEST(MigOptimum, JobsEverySliceSlowsRunOneAfterTheOtherOnTheWholeGpu) {
  // All their work is parallel: 10 s on 7 slices, 17.5 s on 4 and 23.3 s on 3, so a 4g and a 3g
  // side by side end at 27.3 s, and one after the other on 7g.40gb at 25 s.
  JobsOnGpu s = load_jobs_on_gpu(custom_jobs(2, 100, 0));
  const core::Nanos run = time_on(s, 0, "7g.40gb");
  const MigOptimum o = search(s, 1);
  EXPECT_EQ(o.makespan, kCosts.create_time + 2 * (kCosts.start_time + run));
  ASSERT_EQ(o.decisions.size(), 2u);
  EXPECT_EQ(o.decisions[0], "0.000 s: a on 7g.40gb@0 (made)");
  EXPECT_EQ(o.decisions[1],
            fmt::format("{:.3f} s: b on 7g.40gb@0",
                        core::to_seconds(kCosts.create_time + kCosts.start_time + run)));
  // Jobs without kernels cannot be timed side by side, so they never share: the same schedule.
  EXPECT_EQ(search(s, 2).makespan, o.makespan);
}

TEST(MigOptimum, JobsNoSliceSlowsTakeInstancesMadeOneAfterTheOther) {
  JobsOnGpu s = load_jobs_on_gpu(custom_jobs(2, 20, 1));
  const MigOptimum o = search(s, 1);
  EXPECT_EQ(o.makespan, 2 * kCosts.create_time + kCosts.start_time + time_on(s, 0, "1g.5gb"));
  ASSERT_EQ(o.decisions.size(), 2u);
  EXPECT_NE(o.decisions[1].find("(made)"), std::string::npos) << o.decisions[1];
}

TEST(MigOptimum, PairsThatGainShortenTheSchedule) {
  JobsOnGpu s = load_jobs_on_gpu(kThreeTrainingJobs);
  const MigOptimum alone = search(s, 1);
  const MigOptimum shared = search(s, 2);
  EXPECT_TRUE(alone.complete);
  EXPECT_TRUE(shared.complete);
  EXPECT_LT(shared.makespan, alone.makespan);
  bool beside = false;
  for (const std::string& d : shared.decisions) {
    beside = beside || d.find(" beside ") != std::string::npos;
  }
  EXPECT_TRUE(beside);
  // And no schedule with one job to an instance ends sooner than the bound allows.
  auto bound = mig_bound(s.jobs.jobs, s.geometry, s.model, kCosts, 1);
  ASSERT_TRUE(bound.has_value()) << bound.error().message();
  EXPECT_LE(bound->makespan, alone.makespan);
}

TEST(MigOptimum, MixesTooLargeOrSubmittedApartAreNotSearched) {
  JobsOnGpu three = load_jobs_on_gpu(custom_jobs(3, 20, 0));
  auto o = mig_optimum(three.jobs.jobs, three.geometry, three.model, kCosts, 1, {.max_jobs = 2});
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->not_searched, "3 jobs, more than 2");
  EXPECT_TRUE(o->decisions.empty());

  JobsOnGpu apart = load_jobs_on_gpu(R"(gpu: a100-40gb
jobs:
  - {name: a, kind: custom, iterations: 20, iteration_time: 100ms, estimate: 1GiB,
     memory: {base: 1GiB}}
  - {name: b, kind: custom, iterations: 20, iteration_time: 100ms, estimate: 1GiB,
     memory: {base: 1GiB}, submit: 5s}
)");
  o = mig_optimum(apart.jobs.jobs, apart.geometry, apart.model, kCosts, 1);
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->not_searched, "jobs submitted at different times");
}

TEST(MigOptimum, ASearchCutShortSaysSo) {
  JobsOnGpu s = load_jobs_on_gpu(kThreeTrainingJobs);
  const MigOptimum full = search(s, 2);
  const MigOptimum cut = search(s, 2, {.max_jobs = 6, .max_steps = 10});
  EXPECT_FALSE(cut.complete);
  EXPECT_GE(cut.makespan, full.makespan);
  EXPECT_GT(full.steps, 10);
}

}  // namespace
}  // namespace tessera::experiment
