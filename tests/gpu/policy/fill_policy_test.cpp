#include "tessera/gpu/policy/fill_policy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::gpu {
namespace {

// An H100's grid: 132 SMs in steps of 8, at least 8.
PartitionGrid h100_grid() {
  return PartitionGrid{.granularity = 8, .min_sms = 8, .usable_sms = 128, .device_sms = 132};
}

TEST(FillPolicy, StreamPrioritiesRankLatencyCriticalTenantsAboveBestEffort) {
  const std::vector<FillTenant> ts = {{.latency_critical = false, .priority = 50},
                                      {.latency_critical = true, .priority = 10},
                                      {.latency_critical = true, .priority = -3},
                                      {.latency_critical = true, .priority = 10},
                                      {.latency_critical = false, .priority = 0}};
  // A best-effort tenant's own priority does not lift it above latency-critical work; equal
  // priorities share a level; levels are dense from 1.
  EXPECT_EQ(fill_stream_priorities(ts), (std::vector<int>{0, 2, 1, 2, 0}));
}

TEST(FillPolicy, BestEffortGetsEverySmWhileNoLatencyCriticalTenantIsBusy) {
  const std::vector<FillTenant> ts = {{.latency_critical = true, .busy = false},
                                      {.latency_critical = false, .busy = true}};
  const auto sets = fill_sm_sets(h100_grid(), reserve_sms(h100_grid(), 0.25), ts);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_TRUE(sets[0].empty());
  EXPECT_TRUE(sets[1].empty());
}

TEST(FillPolicy, BusyLatencyCriticalWorkHoldsBestEffortToTheTopOfTheGrid) {
  const std::vector<FillTenant> ts = {{.latency_critical = false, .busy = true},
                                      {.latency_critical = true, .busy = true},
                                      {.latency_critical = false, .busy = false}};
  // 0.25 x 128 = 32 SMs: SMs [96, 128), shared by both best-effort tenants.
  const auto sets = fill_sm_sets(h100_grid(), reserve_sms(h100_grid(), 0.25), ts);
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0], device::SmMask::range(96, 128));
  EXPECT_TRUE(sets[1].empty());
  EXPECT_EQ(sets[2], sets[0]);
}

TEST(FillPolicy, TheReserveIsRoundedUpToTheGridAndNeverEmpty) {
  const std::vector<FillTenant> ts = {{.latency_critical = true, .busy = true},
                                      {.latency_critical = false}};
  // 0.1 x 128 = 12.8 -> 13 -> 16 SMs.
  EXPECT_EQ(fill_sm_sets(h100_grid(), reserve_sms(h100_grid(), 0.1), ts)[1].count(), 16);
  // A share too small for one SM still gets the grid's minimum, not "every SM" (an empty mask).
  EXPECT_EQ(fill_sm_sets(h100_grid(), reserve_sms(h100_grid(), 1e-6), ts)[1],
            device::SmMask::range(120, 128));
  EXPECT_EQ(fill_sm_sets(h100_grid(), reserve_sms(h100_grid(), 1.0), ts)[1].count(), 128);
}

// The reserve that follows the slack, on a 20 ms budget: a step within 0.8 of it (16 ms) grows
// the reserve a grid step, up to every usable SM; a step past it halves the reserve, rounded down
// to the grid and never below the floor; in between nothing changes.
TEST(FillPolicy, TheReserveGrowsWithSlackAndHalvesPastTheBudget) {
  const PartitionGrid g = h100_grid();
  const core::Nanos budget = core::millis(20);
  EXPECT_EQ(next_reserve(g, 8, 8, core::millis(10), budget), 16);
  EXPECT_EQ(next_reserve(g, 8, 128, core::millis(10), budget), 128);
  EXPECT_EQ(next_reserve(g, 8, 64, core::millis(18), budget), 64);
  EXPECT_EQ(next_reserve(g, 8, 64, core::millis(20), budget), 64) << "at the budget: kept";
  EXPECT_EQ(next_reserve(g, 8, 64, core::millis(21), budget), 32);
  EXPECT_EQ(next_reserve(g, 8, 40, core::millis(21), budget), 16) << "20 rounds down to 16";
  EXPECT_EQ(next_reserve(g, 16, 24, core::millis(30), budget), 16) << "never below the floor";
  EXPECT_EQ(next_reserve(g, 8, 8, core::millis(30), budget), 8);
  EXPECT_EQ(next_reserve(g, 8, 24, core::millis(30), 0), 24) << "no target: no change";
}

}  // namespace
}  // namespace tessera::gpu
