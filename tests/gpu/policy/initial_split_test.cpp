#include "tessera/gpu/policy/initial_split.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

namespace tessera::gpu {
namespace {

using ::testing::ElementsAre;

// An H100 in steps of 8 SMs: 132 SMs, 128 usable.
PartitionGrid h100_grid() {
  return PartitionGrid{.granularity = 8, .min_sms = 8, .usable_sms = 128, .device_sms = 132};
}

TenantInfo tenant(TenantId id, bool latency_critical) {
  // fmt::format, not "t" + string: GCC 12 at -O3 flags that falsely (-Wrestrict, PR105651).
  return TenantInfo{.id = id, .name = fmt::format("t{}", id), .latency_critical = latency_critical};
}

TEST(InitialSplit, LaysOutLatencyCriticalTenantsFirstInTheOrderGiven) {
  const std::vector<TenantInfo> tenants{tenant(0, false), tenant(1, true), tenant(2, false),
                                        tenant(3, true)};
  const InitialSplit split = initial_split(h100_grid(), tenants);
  EXPECT_THAT(split.order, ElementsAre(1, 3, 0, 2));
}

TEST(InitialSplit, SharesTheGranulesEvenlyWithTheRemainderToTheFirst) {
  // 16 granules of 8 SMs over 3 tenants: 6, 5, 5.
  const std::vector<TenantInfo> tenants{tenant(0, true), tenant(1, false), tenant(2, false)};
  const InitialSplit split = initial_split(h100_grid(), tenants);
  EXPECT_THAT(split.sms, ElementsAre(48, 40, 40));
  EXPECT_EQ(std::accumulate(split.sms.begin(), split.sms.end(), 0), 128);
}

TEST(InitialSplit, EveryTenantGetsTheMinimumWhenTheyFit) {
  // As many tenants as there are minimum partitions: one granule each, none of the 4 spare SMs.
  std::vector<TenantInfo> tenants;
  for (TenantId i = 0; i < 16; ++i) tenants.push_back(tenant(i, i % 2 == 0));
  const InitialSplit split = initial_split(h100_grid(), tenants);
  ASSERT_EQ(split.sms.size(), 16u);
  for (int s : split.sms) EXPECT_EQ(s, 8);
}

TEST(InitialSplit, OneTenantTakesEveryUsableSm) {
  const std::vector<TenantInfo> tenants{tenant(7, false)};
  const InitialSplit split = initial_split(h100_grid(), tenants);
  EXPECT_THAT(split.order, ElementsAre(0));
  EXPECT_THAT(split.sms, ElementsAre(128));
}

}  // namespace
}  // namespace tessera::gpu
