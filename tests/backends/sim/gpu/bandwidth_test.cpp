#include "tessera/backends/sim/gpu/bandwidth.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::sim {
namespace {

std::vector<double> fill(std::vector<double> demand, double capacity) {
  std::vector<double> share(demand.size(), 0);
  water_fill(demand, capacity, share);
  return share;
}

TEST(WaterFill, DemandsThatFitAreServedInFull) {
  EXPECT_EQ(fill({300, 500, 0}, 1000), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(fill({1000}, 1000), (std::vector<double>{1}));
}

TEST(WaterFill, EqualDemandsSplitEvenly) {
  EXPECT_EQ(fill({1000, 1000}, 1000), (std::vector<double>{0.5, 0.5}));
}

TEST(WaterFill, SmallDemandIsServedAndTheRestSplitsWhatIsLeft) {
  // Level: 1000 / 3 = 333 > 100, so the small one is served; the other two split 900.
  const auto s = fill({100, 800, 1600}, 1000);
  EXPECT_DOUBLE_EQ(s[0], 1);
  EXPECT_DOUBLE_EQ(s[1] * 800, 450);
  EXPECT_DOUBLE_EQ(s[2] * 1600, 450);
}

TEST(WaterFill, ServingOneCanLiftTheLevelForAnother) {
  // Level 1200 / 3 = 400 serves 300; then 900 / 2 = 450 serves 420; the last gets 480.
  const auto s = fill({300, 420, 2000}, 1200);
  EXPECT_DOUBLE_EQ(s[0], 1);
  EXPECT_DOUBLE_EQ(s[1], 1);
  EXPECT_DOUBLE_EQ(s[2] * 2000, 480);
}

TEST(WaterFill, GrantsNeverExceedCapacity) {
  const std::vector<double> demand{5, 70, 130, 900, 20};
  const auto s = fill(demand, 500);
  double used = 0;
  for (std::size_t i = 0; i < demand.size(); ++i) {
    EXPECT_GT(s[i], 0);
    EXPECT_LE(s[i], 1);
    used += s[i] * demand[i];
  }
  EXPECT_NEAR(used, 500, 1e-9);
}

TEST(WaterFill, RoundingAboveCapacityStillCountsAsFitting) {
  EXPECT_EQ(fill({1000 * (1 + 1e-15)}, 1000), (std::vector<double>{1}));
}

}  // namespace
}  // namespace tessera::sim
