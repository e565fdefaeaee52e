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

// One and two users take a shortcut; a user asking for nothing changes no one's share, so adding
// idle users sends the same demands down the general loop, which must agree bit for bit.
TEST(WaterFill, OneAndTwoUsersGetExactlyWhatTheGeneralLoopGives) {
  const std::vector<double> demands{0, 1, 250, 499.5, 500, 500.5, 750, 999, 1000, 1e6};
  for (const double capacity : {0.0, 1000.0}) {
    for (const double a : demands) {
      const auto one = fill({a}, capacity);
      const auto general_one = fill({a, 0, 0}, capacity);
      EXPECT_EQ(one[0], general_one[0]) << a << " of " << capacity;
      for (const double b : demands) {
        const auto two = fill({a, b}, capacity);
        const auto general = fill({a, 0, b}, capacity);
        EXPECT_EQ(two[0], general[0]) << a << ", " << b << " of " << capacity;
        EXPECT_EQ(two[1], general[2]) << a << ", " << b << " of " << capacity;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::sim
