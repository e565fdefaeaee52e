#include "tessera/workload/jobs/batch_job.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace tessera::workload {
namespace {

constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kGiB = 1024 * kMiB;

TEST(BatchJobTest, KindNames) {
  EXPECT_EQ(to_string(JobKind::kScientific), "scientific");
  EXPECT_EQ(to_string(JobKind::kTraining), "training");
  EXPECT_EQ(to_string(JobKind::kInference), "inference");
  EXPECT_EQ(to_string(JobKind::kCustom), "custom");
}

TEST(MemoryTrajectoryTest, RequestedAddsEachTerm) {
  MemoryTrajectory m;
  m.base_bytes = 1000;
  m.per_iteration = 10;
  m.per_iteration_squared = 0.5;
  m.steps = {{.iteration = 3, .bytes = 7}, {.iteration = 5, .bytes = 100}};
  // i = 0: base only; i = 4: 1000 + 40 + 8 + 7; i = 5: 1000 + 50 + 12.5 + 7 + 100, rounded up.
  EXPECT_EQ(m.requested_at(0, 10), 1000);
  EXPECT_EQ(m.requested_at(2, 10), 1000 + 20 + 2);
  EXPECT_EQ(m.requested_at(3, 10), 1000 + 30 + 5 + 7);  // 4.5 rounds up to 5
  EXPECT_EQ(m.requested_at(4, 10), 1000 + 40 + 8 + 7);
  EXPECT_EQ(m.requested_at(5, 10), 1000 + 50 + 13 + 7 + 100);
}

TEST(MemoryTrajectoryTest, ReservedWithoutSlackEqualsRequested) {
  MemoryTrajectory m;
  m.base_bytes = 123;
  m.per_iteration = 1;
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(m.reserved_at(i, 5), m.requested_at(i, 5));
}

TEST(MemoryTrajectoryTest, ReuseRatioInterpolatesLinearly) {
  MemoryTrajectory m;
  m.base_bytes = 1000;
  m.reuse_start = 0.5;
  m.reuse_end = 1.0;
  // 5 iterations: ratios 0.5, 0.625, 0.75, 0.875, 1.0.
  EXPECT_EQ(m.reserved_at(0, 5), 2000);
  EXPECT_EQ(m.reserved_at(1, 5), 1600);
  EXPECT_EQ(m.reserved_at(2, 5), 1334);  // 1333.33 rounded up
  EXPECT_EQ(m.reserved_at(3, 5), 1143);  // 1142.86 rounded up
  EXPECT_EQ(m.reserved_at(4, 5), 1000);
  // A single iteration uses the start ratio.
  EXPECT_EQ(m.reserved_at(0, 1), 2000);
}

TEST(MemoryTrajectoryTest, GranuleRoundsReservedUp) {
  MemoryTrajectory m;
  m.base_bytes = 5 * kMiB + 1;
  m.granule_bytes = 2 * kMiB;
  EXPECT_EQ(m.reserved_at(0, 1), 6 * kMiB);
  m.base_bytes = 6 * kMiB;  // already a multiple
  EXPECT_EQ(m.reserved_at(0, 1), 6 * kMiB);
  m.base_bytes = 0;
  EXPECT_EQ(m.reserved_at(0, 1), 0);
}

TEST(MemoryTrajectoryTest, PeakFindsTheLargest) {
  MemoryTrajectory m;
  m.base_bytes = kGiB;
  m.per_iteration = static_cast<double>(kMiB);
  EXPECT_EQ(m.peak_reserved(100), kGiB + 99 * kMiB);
  // Cache slack that shrinks over the run can put the peak at the start.
  MemoryTrajectory shrinking;
  shrinking.base_bytes = 1000;
  shrinking.reuse_start = 0.5;
  shrinking.reuse_end = 1.0;
  EXPECT_EQ(shrinking.peak_reserved(5), 2000);
  EXPECT_EQ(MemoryTrajectory{}.peak_reserved(0), 0);
}

TEST(MemoryTrajectoryTest, FirstIterationAboveAStep) {
  // The review's case: flat at 4 GiB, then 5 GiB more at iteration 50.
  MemoryTrajectory m;
  m.base_bytes = 4 * kGiB;
  m.steps = {{.iteration = 50, .bytes = 5 * kGiB}};
  EXPECT_EQ(m.first_iteration_above(5 * kGiB, 100), 50);
  EXPECT_EQ(m.first_iteration_above(9 * kGiB, 100), -1);  // exactly at the limit fits
  EXPECT_EQ(m.first_iteration_above(4 * kGiB - 1, 100), 0);
  EXPECT_EQ(m.first_iteration_above(5 * kGiB, 50), -1);  // the step is never reached
}

TEST(MemoryTrajectoryTest, HugeGrowthSaturatesInsteadOfWrapping) {
  MemoryTrajectory m;
  m.base_bytes = std::numeric_limits<std::int64_t>::max() / 2;
  m.per_iteration_squared = 1e30;
  m.granule_bytes = 2 * kMiB;
  const std::int64_t r = m.reserved_at(1000, 1001);
  EXPECT_GT(r, m.base_bytes);
  EXPECT_GT(m.requested_at(1000, 1001), 0);
}

}  // namespace
}  // namespace tessera::workload
