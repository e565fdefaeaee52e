#include "tessera/device/poll_loop.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::device {
namespace {

// Each poll moves the manual clock on by `step`, so the loop's time is the test's.
struct SteppedPolls {
  core::ManualClock clock{0};
  WallClockExecutor executor{&clock};
  core::Nanos step = 10;
  int polls = 0;
  std::function<core::Status()> poll() {
    return [this]() -> core::Status {
      ++polls;
      clock.advance(step);
      return {};
    };
  }
};

TEST(PollUntil, StopsAtTheDeadlineAfterRunningTheTimersDueBeforeIt) {
  SteppedPolls p;
  std::vector<core::Nanos> ran;
  p.executor.schedule_at(15, [&] { ran.push_back(p.clock.now()); });
  p.executor.schedule_at(1000, [&] { ran.push_back(p.clock.now()); });
  ASSERT_TRUE(poll_until(p.executor, 50, core::micros(20), p.poll()));
  EXPECT_EQ(p.polls, 5);  // at 0, 10, 20, 30, 40: the clock reads 50 after the fifth
  EXPECT_EQ(ran, (std::vector<core::Nanos>{20}));  // due at 15, run at the next round
  EXPECT_TRUE(p.executor.has_pending());
}

TEST(PollUntil, StopsWhenFinishedHoldsAfterAPoll) {
  SteppedPolls p;
  ASSERT_TRUE(poll_until(p.executor, core::kNever, core::micros(20), p.poll(),
                         [&p] { return p.polls == 3; }));
  EXPECT_EQ(p.polls, 3);
  EXPECT_EQ(p.clock.now(), 30);
}

TEST(PollUntil, PollsOnceEvenPastTheDeadline) {
  SteppedPolls p;
  p.clock.set(100);
  ASSERT_TRUE(poll_until(p.executor, 50, core::micros(20), p.poll()));
  EXPECT_EQ(p.polls, 1);
}

TEST(PollUntil, APollErrorEndsTheLoopAndIsReturned) {
  core::ManualClock clock(0);
  WallClockExecutor executor(&clock);
  int polls = 0;
  const auto st = poll_until(executor, core::kNever, core::micros(20), [&]() -> core::Status {
    if (++polls == 2) {
      return core::fail(core::Domain::kDevice, core::Code::kInternal, "the device went away");
    }
    clock.advance(1);
    return {};
  });
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(), "the device went away");
  EXPECT_EQ(polls, 2);
}

TEST(PollUntil, TimersScheduledByAPollRunInTheNextRound) {
  SteppedPolls p;
  std::vector<std::string> order;
  auto inner = p.poll();
  const auto poll = [&]() -> core::Status {
    order.push_back("poll");
    if (p.polls == 0) p.executor.schedule_after(0, [&] { order.push_back("timer"); });
    return inner();
  };
  ASSERT_TRUE(poll_until(p.executor, 20, core::micros(20), poll));
  EXPECT_EQ(order, (std::vector<std::string>{"poll", "timer", "poll"}));
}

}  // namespace
}  // namespace tessera::device
