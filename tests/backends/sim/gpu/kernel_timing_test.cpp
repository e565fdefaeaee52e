#include "tessera/backends/sim/gpu/kernel_timing.hpp"

#include <gtest/gtest.h>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"

namespace tessera::sim {
namespace {

class Timing : public ::testing::Test {
 protected:
  hw::GpuSpec spec = test::TestGpu().build();  // 16 SMs, 1000 FP32 FLOP/ns per SM, 1600 B/ns
  SimGpuOptions options = test::exact_options();
  TimingModel model{spec, options};
};

TEST_F(Timing, BlockTimeFollowsThePipesPerSmPeak) {
  auto k = test::make_kernel("k", 1, 1e6, 0);
  EXPECT_DOUBLE_EQ(model.shape(k).block_ns_at_boost, 1000);
  k.pipe = workload::ComputePipe::kTensorFp16;  // 4x the FP32 peak on the test GPU
  EXPECT_DOUBLE_EQ(model.shape(k).block_ns_at_boost, 250);
}

TEST_F(Timing, AchievableFractionStretchesBlockTime) {
  options.achievable_compute_fraction = 0.5;
  const TimingModel half(spec, options);
  EXPECT_DOUBLE_EQ(half.shape(test::make_kernel("k", 1, 1e6, 0)).block_ns_at_boost, 2000);
}

TEST_F(Timing, SmsWantedIsOnePerUnfinishedBlock) {
  EXPECT_EQ(TimingModel::sms_wanted(1), 1);
  EXPECT_EQ(TimingModel::sms_wanted(4), 4);
  EXPECT_EQ(TimingModel::sms_wanted(4.5), 5);
  EXPECT_EQ(TimingModel::sms_wanted(64), 64);
  EXPECT_EQ(TimingModel::sms_wanted(0), 0);
}

TEST_F(Timing, ComputeTimeIsWholeRoundsOfBlockTime) {
  const auto shape = model.shape(test::make_kernel("k", 1, 1e6, 0, /*bps=*/4));
  // 64 blocks on 16 SMs: a full wave of 16 x 4 blocks takes 4 block-times.
  EXPECT_DOUBLE_EQ(model.plan(shape, 64, 16, 1600, 0).compute_ns_at_boost, 4000);
  // One more block adds one round on the busiest SM.
  EXPECT_DOUBLE_EQ(model.plan(shape, 65, 16, 1600, 0).compute_ns_at_boost, 5000);
  EXPECT_DOUBLE_EQ(model.plan(shape, 80, 16, 1600, 0).compute_ns_at_boost, 5000);
  EXPECT_DOUBLE_EQ(model.plan(shape, 81, 16, 1600, 0).compute_ns_at_boost, 6000);
}

TEST_F(Timing, MemoryTimeIsCappedPerSmAndByTheDomain) {
  const auto shape = model.shape(test::make_kernel("k", 1, 0, 1e6));
  // 1.6e9 bytes. Per SM at most 2 x 100 bytes/ns.
  EXPECT_DOUBLE_EQ(model.plan(shape, 1600, 1, 1600, 0).memory_ns, 1.6e9 / 200);
  EXPECT_DOUBLE_EQ(model.plan(shape, 1600, 4, 1600, 0).memory_ns, 1.6e9 / 800);
  EXPECT_DOUBLE_EQ(model.plan(shape, 1600, 8, 1600, 0).memory_ns, 1.6e9 / 1600);
  EXPECT_DOUBLE_EQ(model.plan(shape, 1600, 16, 1600, 0).memory_ns, 1.6e9 / 1600);
  EXPECT_DOUBLE_EQ(model.plan(shape, 1600, 16, 400, 0).memory_ns, 1.6e9 / 400);
}

TEST_F(Timing, RatesCombineOverheadComputeAndMemory) {
  const auto shape = model.shape(test::make_kernel("k", 1, 1e6, 1e5));
  const Plan p = model.plan(shape, 16, 16, 1600, 500);  // compute 1000 ns, memory 1000 ns
  const PlanRates at_boost = TimingModel::rates(p, 1.0);
  EXPECT_DOUBLE_EQ(at_boost.duration_ns, 1500);
  EXPECT_DOUBLE_EQ(at_boost.demand, 1.6e6 / 1500);
  EXPECT_DOUBLE_EQ(at_boost.compute_share, 1000.0 / 1500);
  // At half the clock compute takes 2000 ns and becomes the bound.
  const PlanRates at_half = TimingModel::rates(p, 0.5);
  EXPECT_DOUBLE_EQ(at_half.duration_ns, 2500);
  EXPECT_DOUBLE_EQ(at_half.compute_share, 2000.0 / 2500);
}

TEST(RemainingNs, RoundsUpButNotForFloatingPointNoise) {
  EXPECT_EQ(remaining_ns(1, 1000, 1), 1000);
  EXPECT_EQ(remaining_ns(1, 1000.4, 1), 1001);
  EXPECT_EQ(remaining_ns(1, 1000 * (1 + 1e-15), 1), 1000);
  EXPECT_EQ(remaining_ns(0.5, 1000, 0.5), 1000);
  EXPECT_EQ(remaining_ns(0, 1000, 1), 0);
}

}  // namespace
}  // namespace tessera::sim
