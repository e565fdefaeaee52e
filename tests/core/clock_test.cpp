#include "tessera/core/clock.hpp"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

TEST(ManualClock, StartsWhereToldAndMovesOnlyWhenTold) {
  ManualClock clock(millis(5));
  EXPECT_EQ(clock.now(), millis(5));
  EXPECT_EQ(clock.now(), millis(5));
  clock.advance(micros(250));
  EXPECT_EQ(clock.now(), millis(5) + micros(250));
  clock.set(seconds(2));
  EXPECT_EQ(clock.now(), seconds(2));
}

TEST(ManualClock, DefaultsToZero) {
  ManualClock clock;
  EXPECT_EQ(clock.now(), 0);
}

TEST(ManualClock, WorksThroughTheClockInterface) {
  ManualClock manual;
  const Clock& clock = manual;
  manual.advance(42);
  EXPECT_EQ(clock.now(), 42);
}

TEST(SystemClock, StartsNearZeroAndNeverGoesBack) {
  SystemClock clock;
  Nanos previous = clock.now();
  EXPECT_GE(previous, 0);
  EXPECT_LT(previous, seconds(60));  // measured from construction, not from boot
  for (int i = 0; i < 10'000; ++i) {
    const Nanos t = clock.now();
    ASSERT_GE(t, previous);
    previous = t;
  }
}

TEST(SystemClock, Advances) {
  SystemClock clock;
  const Nanos first = clock.now();
  Nanos t = first;
  // steady_clock ticks in nanoseconds on Linux; a bounded spin sees it move.
  for (long i = 0; i < 100'000'000 && t == first; ++i) t = clock.now();
  EXPECT_GT(t, first);
}

}  // namespace
}  // namespace tessera::core
