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
  const auto sets = fill_sm_sets(h100_grid(), 0.25, ts);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_TRUE(sets[0].empty());
  EXPECT_TRUE(sets[1].empty());
}

TEST(FillPolicy, BusyLatencyCriticalWorkHoldsBestEffortToTheTopOfTheGrid) {
  const std::vector<FillTenant> ts = {{.latency_critical = false, .busy = true},
                                      {.latency_critical = true, .busy = true},
                                      {.latency_critical = false, .busy = false}};
  // 0.25 x 128 = 32 SMs: SMs [96, 128), shared by both best-effort tenants.
  const auto sets = fill_sm_sets(h100_grid(), 0.25, ts);
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0], device::SmMask::range(96, 128));
  EXPECT_TRUE(sets[1].empty());
  EXPECT_EQ(sets[2], sets[0]);
}

TEST(FillPolicy, TheReserveIsRoundedUpToTheGridAndNeverEmpty) {
  const std::vector<FillTenant> ts = {{.latency_critical = true, .busy = true},
                                      {.latency_critical = false}};
  // 0.1 x 128 = 12.8 -> 13 -> 16 SMs.
  EXPECT_EQ(fill_sm_sets(h100_grid(), 0.1, ts)[1].count(), 16);
  // A share too small for one SM still gets the grid's minimum, not "every SM" (an empty mask).
  EXPECT_EQ(fill_sm_sets(h100_grid(), 1e-6, ts)[1], device::SmMask::range(120, 128));
  EXPECT_EQ(fill_sm_sets(h100_grid(), 1.0, ts)[1].count(), 128);
}

}  // namespace
}  // namespace tessera::gpu
