#include "tessera/backends/sim/mig/slice_cost.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backends/sim/mig/sim_mig_test_support.hpp"
#include "tessera/workload/kernels/gemm_shapes.hpp"

namespace tessera::sim {
namespace {

using test::custom_job;
using test::k1g;
using test::k3g;
using test::k7g;
using test::kGiB;
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

// One large GEMM per iteration: compute-bound at any slice size.
BatchJobPtr gemm_job(std::int64_t iterations = 3) {
  auto job = std::make_shared<BatchJob>();
  job->name = "gemm";
  job->kind = workload::JobKind::kCustom;
  job->iterations = iterations;
  job->memory.base_bytes = kGiB;
  job->work.key = "gemm-8192";
  job->work.build = [](std::int64_t) {
    workload::KernelSequence seq;
    seq.groups.push_back(
        {.kernels = {workload::make_gemm(workload::dense_gemm("gemm", 8192, 8192, 8192, 2))},
         .repeat = 1});
    return seq;
  };
  return job;
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

}  // namespace
}  // namespace tessera::sim
