#include "tessera/device/wall_clock_executor.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::device {
namespace {

TEST(WallClockExecutor, RunsDueTimersInTimeThenSchedulingOrder) {
  core::ManualClock clock(100);
  WallClockExecutor ex(&clock);
  std::vector<std::string> ran;
  ex.schedule_at(300, [&] { ran.push_back("c"); });
  ex.schedule_at(200, [&] { ran.push_back("a"); });
  ex.schedule_at(200, [&] { ran.push_back("b"); });
  ex.schedule_at(900, [&] { ran.push_back("late"); });
  EXPECT_EQ(ex.next_due(), 200);

  EXPECT_EQ(ex.run_due(), 0);  // nothing is due at 100
  clock.set(300);
  EXPECT_EQ(ex.run_due(), 3);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(ex.has_pending());
  EXPECT_EQ(ex.next_due(), 900);
}

TEST(WallClockExecutor, PastTimesAreClampedToNowAndKeepTheirOrder) {
  core::ManualClock clock(1000);
  WallClockExecutor ex(&clock);
  std::vector<int> ran;
  ex.schedule_at(5, [&] { ran.push_back(1); });
  ex.schedule_after(0, [&] { ran.push_back(2); });
  EXPECT_EQ(ex.next_due(), 1000);
  EXPECT_EQ(ex.run_due(), 2);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

TEST(WallClockExecutor, CancelledTimersNeverRun) {
  core::ManualClock clock;
  WallClockExecutor ex(&clock);
  bool ran = false;
  const TimerId id = ex.schedule_at(10, [&] { ran = true; });
  EXPECT_TRUE(ex.cancel(id));
  EXPECT_FALSE(ex.cancel(id));
  EXPECT_FALSE(ex.has_pending());
  EXPECT_EQ(ex.next_due(), core::kNever);
  clock.set(20);
  EXPECT_EQ(ex.run_due(), 0);
  EXPECT_FALSE(ran);
}

TEST(WallClockExecutor, CallbacksMayScheduleAndCancel) {
  core::ManualClock clock;
  WallClockExecutor ex(&clock);
  std::vector<int> ran;
  TimerId later = 0;
  ex.schedule_at(0, [&] {
    ran.push_back(1);
    ex.schedule_at(0, [&] { ran.push_back(2); });  // due now: runs in the same run_due
    ex.cancel(later);
  });
  later = ex.schedule_at(0, [&] { ran.push_back(3); });
  ex.schedule_at(50, [&] { ran.push_back(4); });
  EXPECT_EQ(ex.run_due(), 2);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_FALSE(ex.cancel(later));
}

TEST(WallClockExecutor, DefaultsToTheWallClock) {
  WallClockExecutor ex;
  const core::Nanos a = ex.now();
  const core::Nanos b = ex.now();
  EXPECT_GE(a, 0);
  EXPECT_GE(b, a);
}

}  // namespace
}  // namespace tessera::device
