#include "tessera/core/time.hpp"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

TEST(Time, UnitConstants) {
  EXPECT_EQ(kNanosPerMicro, 1'000);
  EXPECT_EQ(kNanosPerMilli, 1'000'000);
  EXPECT_EQ(kNanosPerSecond, 1'000'000'000);
  EXPECT_GT(kNever, seconds(1e9));  // later than any simulated time
}

TEST(Time, ConvertsToNanos) {
  EXPECT_EQ(micros(40), 40'000);
  EXPECT_EQ(millis(250), 250'000'000);
  EXPECT_EQ(seconds(1.5), 1'500'000'000);
  EXPECT_EQ(seconds(0), 0);
  EXPECT_EQ(millis(-2), -2'000'000);
}

TEST(Time, RoundsToTheNearestNanosecond) {
  // 1.005 * 1e6 is 1004999.9999999999 in binary floating point; truncating would lose 1 ns.
  EXPECT_EQ(millis(1.005), 1'005'000);
  EXPECT_EQ(seconds(1.005), 1'005'000'000);
  EXPECT_EQ(micros(1.005), 1'005);
  EXPECT_EQ(micros(0.0004), 0);
  EXPECT_EQ(micros(0.0006), 1);
  EXPECT_EQ(micros(-0.0006), -1);
}

TEST(Time, ConvertsFromNanos) {
  EXPECT_DOUBLE_EQ(to_seconds(1'500'000'000), 1.5);
  EXPECT_DOUBLE_EQ(to_millis(250'000'000), 250.0);
  EXPECT_DOUBLE_EQ(to_micros(40'000), 40.0);
  EXPECT_DOUBLE_EQ(to_millis(millis(12.5)), 12.5);
}

TEST(Time, HelpersAreConstexpr) {
  static_assert(millis(3) == 3'000'000);
  static_assert(to_micros(micros(7)) == 7.0);
  SUCCEED();
}

}  // namespace
}  // namespace tessera::core
