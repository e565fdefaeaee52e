#include "tessera/backends/sim/mig/slice_cost.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backends/sim/mig/sim_mig_test_support.hpp"

namespace tessera::sim {
namespace {

using test::custom_job;
using test::gemm_job;
using test::k1g;
using test::k3g;
using test::k7g;
using test::kGiB;
using test::small_gemm_job;
using workload::BatchJob;
using workload::BatchJobPtr;

hw::MigGeometry a100_geometry() {
  auto g = hw::find_mig_geometry("a100-40gb");
  EXPECT_TRUE(g.has_value());
  return g.value();
}

SliceCostModel a100() {
  auto spec = hw::find_gpu("a100-40gb");
  EXPECT_TRUE(spec.has_value());
  return SliceCostModel(spec.value(), a100_geometry());
}

hw::MigProfile profile(int id) {
  const hw::MigGeometry g = a100_geometry();
  const hw::MigProfile* p = g.find(id);
  EXPECT_NE(p, nullptr);
  return *p;
}

// A job whose GEMM grows with the iteration (a growing context); `built` records the
// iterations its work was built for.
BatchJobPtr growing_job(std::int64_t iterations, std::vector<std::int64_t>* built = nullptr) {
  auto job = std::make_shared<BatchJob>(*gemm_job(iterations));
  job->work.key = "growing";
  job->work.varies = true;
  job->work.build = [built](std::int64_t i) {
    if (built != nullptr) built->push_back(i);
    workload::KernelSequence seq;
    seq.groups.push_back(
        {.kernels = {workload::make_gemm(workload::dense_gemm("g", 1024 + i, 4096, 4096, 2))},
         .repeat = 1});
    return seq;
  };
  return job;
}

TEST(SliceCostModelTest, SmallerSlicesAreSlowerForComputeBoundWork) {
  auto mig = a100();
  const auto job = gemm_job();
  const auto t1 = mig.iteration(*job, 0, profile(k1g));
  const auto t3 = mig.iteration(*job, 0, profile(k3g));
  const auto t7 = mig.iteration(*job, 0, profile(k7g));
  ASSERT_TRUE(t1 && t3 && t7);
  EXPECT_GT(t1->time, t3->time);
  EXPECT_GT(t3->time, t7->time);
  // Compute-bound: time scales about with SMs (14 vs 42 vs 98).
  EXPECT_NEAR(static_cast<double>(t1->time) / static_cast<double>(t7->time), 98.0 / 14.0, 1.0);
  EXPECT_GT(t7->active_watts, t1->active_watts);
  EXPECT_LE(t7->active_watts, 400.0 - 52.0);
}

TEST(SliceCostModelTest, WholeGpuIsNotSlowerThanSevenSlices) {
  auto mig = a100();
  const hw::MigGeometry whole = whole_gpu_geometry(mig.spec());
  SliceCostModel full(mig.spec(), whole);
  ASSERT_EQ(whole.profiles.size(), 1U);
  const auto& p = whole.profiles[0];
  EXPECT_EQ(p.id, -1);
  EXPECT_EQ(p.name, "full");
  EXPECT_EQ(p.sms, 108);
  EXPECT_EQ(p.memory_bytes, 40 * kGiB);
  const auto job = gemm_job();
  const auto t7 = mig.iteration(*job, 0, profile(k7g));
  const auto tw = full.iteration(*job, 0, p);
  ASSERT_TRUE(t7 && tw);
  EXPECT_LT(tw->time, t7->time);
}

TEST(SliceCostModelTest, CustomJobsScaleByAmdahl) {
  auto mig = a100();
  const auto job = custom_job(1, core::millis(10), 0.25);
  const auto t1 = mig.iteration(*job, 0, profile(k1g));
  const auto t7 = mig.iteration(*job, 0, profile(k7g));
  ASSERT_TRUE(t1 && t7);
  EXPECT_EQ(t7->time, core::millis(10));
  // 0.25 + 0.75 x 98 / 14 = 5.5
  EXPECT_EQ(t1->time, core::millis(55));
  EXPECT_DOUBLE_EQ(t1->active_watts, (400.0 - 52.0) * 14 / 108 * 0.6);
}

TEST(SliceCostModelTest, VaryingWorkIsTimedPerBucket) {
  auto mig = a100();
  std::vector<std::int64_t> built;
  const auto job = growing_job(1000, &built);
  const auto a = mig.iteration(*job, 0, profile(k7g));
  const auto b = mig.iteration(*job, 255, profile(k7g));
  const auto c = mig.iteration(*job, 256, profile(k7g));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->time, b->time);
  EXPECT_LT(a->time, c->time);
  EXPECT_EQ(built, (std::vector<std::int64_t>{128, 384}));
}

TEST(SliceCostModelTest, JobTimeSumsEveryIterationTimingEachBucketOnce) {
  auto mig = a100();
  const auto steady = gemm_job(10);
  const auto one = mig.iteration(*steady, 0, profile(k3g));
  const auto all = mig.job_time(*steady, profile(k3g));
  ASSERT_TRUE(one && all);
  EXPECT_EQ(*all, one->time * 10);

  const auto growing = growing_job(600);
  core::Nanos expected = 0;
  for (const std::int64_t i : {0, 256, 512}) {
    const auto c = mig.iteration(*growing, i, profile(k7g));
    ASSERT_TRUE(c);
    expected += c->time * std::min<std::int64_t>(256, 600 - i);
  }
  EXPECT_EQ(mig.job_time(*growing, profile(k7g)).value_or(0), expected);

  const auto custom = custom_job(4, core::millis(10));
  EXPECT_EQ(mig.job_time(*custom, profile(k7g)).value_or(0), core::millis(40));
}

TEST(SliceCostModelTest, TwoJobsThatFillTheSliceEachTakeAboutTwiceAsLong) {
  auto mig = a100();
  const auto job = gemm_job();
  for (const int id : {k1g, k7g}) {
    const auto c = mig.co_run(*job, 0, *job, 0, profile(id));
    ASSERT_TRUE(c.has_value()) << c.error().message();
    EXPECT_GT(c->slowdown_a, 1.7) << id;
    EXPECT_LT(c->slowdown_a, 2.3) << id;
    EXPECT_NEAR(c->slowdown_a, c->slowdown_b, 0.35) << id;
    // Together they keep the slice about as busy as one job does, not twice.
    const auto alone = mig.iteration(*job, 0, profile(id));
    ASSERT_TRUE(alone.has_value());
    EXPECT_GT(c->active_watts, 0.8 * alone->active_watts);
    EXPECT_LT(c->active_watts, 1.3 * alone->active_watts);
  }
}

TEST(SliceCostModelTest, TwoSmallJobsBarelySlowEachOtherOnALargeSlice) {
  auto mig = a100();
  const auto a = small_gemm_job("small-a");
  const auto b = small_gemm_job("small-b");
  const auto wide = mig.co_run(*a, *b, profile(k7g));
  ASSERT_TRUE(wide.has_value()) << wide.error().message();
  EXPECT_LT(wide->slowdown_a, 1.3);
  EXPECT_LT(wide->slowdown_b, 1.3);
  // On the smallest slice they compete for its few SMs.
  const auto narrow = mig.co_run(*a, *b, profile(k1g));
  ASSERT_TRUE(narrow.has_value());
  EXPECT_GT(narrow->slowdown_a, wide->slowdown_a + 0.3);
}

TEST(SliceCostModelTest, APairIsTheSameEitherWayRound) {
  auto mig = a100();
  const auto big = gemm_job();
  const auto small = small_gemm_job("small");
  const auto ab = mig.co_run(*big, 0, *small, 0, profile(k3g));
  const auto ba = mig.co_run(*small, 0, *big, 0, profile(k3g));
  ASSERT_TRUE(ab.has_value() && ba.has_value());
  EXPECT_EQ(ab->slowdown_a, ba->slowdown_b);
  EXPECT_EQ(ab->slowdown_b, ba->slowdown_a);
  // A fresh model, asked the other way round first, simulates the same pair.
  auto fresh = a100();
  const auto first = fresh.co_run(*small, 0, *big, 0, profile(k3g));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->slowdown_a, ba->slowdown_a);
  EXPECT_EQ(first->slowdown_b, ba->slowdown_b);
}

TEST(SliceCostModelTest, CoRunNeedsKernelsAndAKnownMode) {
  auto mig = a100();
  const auto custom = custom_job(3, core::millis(40));
  const auto c = mig.co_run(*custom, *gemm_job(), profile(k7g));
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), core::Code::kUnsupported);
  EXPECT_NE(c.error().message().find("has no kernels"), std::string::npos);

  auto spec = hw::find_gpu("a100-40gb");
  ASSERT_TRUE(spec.has_value());
  SliceCostModel unknown(spec.value(), a100_geometry(), "no-such-mode");
  const auto u = unknown.co_run(*gemm_job(), *gemm_job(), profile(k7g));
  ASSERT_FALSE(u.has_value());
  EXPECT_NE(u.error().message().find("no-such-mode"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
