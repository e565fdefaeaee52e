#include "tessera/sim/engine.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera::sim {
namespace {

TEST(Engine, RunsEventsInTimeOrderAndSameTimeInScheduleOrder) {
  Engine e;
  std::vector<int> order;
  e.schedule_at(30, [&] { order.push_back(3); });
  e.schedule_at(10, [&] { order.push_back(1); });
  e.schedule_at(20, [&] { order.push_back(20); });
  e.schedule_at(20, [&] { order.push_back(21); });
  e.schedule_at(20, [&] { order.push_back(22); });
  e.run_until(core::kNever);
  EXPECT_EQ(order, (std::vector<int>{1, 20, 21, 22, 3}));
  EXPECT_EQ(e.now(), 30);
  EXPECT_EQ(e.events_executed(), 5u);
  EXPECT_EQ(e.pending(), 0u);
}

TEST(Engine, PastTimesAreClampedToNow) {
  Engine e;
  core::Nanos seen = -1;
  e.schedule_at(100, [&] { e.schedule_at(5, [&] { seen = e.now(); }); });
  e.run_until(core::kNever);
  EXPECT_EQ(seen, 100);
}

TEST(Engine, CancelRemovesAPendingEventOnlyOnce) {
  Engine e;
  bool ran = false;
  const auto id = e.schedule_at(10, [&] { ran = true; });
  EXPECT_EQ(e.pending(), 1u);
  EXPECT_TRUE(e.cancel(id));
  EXPECT_FALSE(e.cancel(id));
  EXPECT_EQ(e.pending(), 0u);
  e.run_until(core::kNever);
  EXPECT_FALSE(ran);
  EXPECT_EQ(e.events_executed(), 0u);
}

TEST(Engine, CancelOfExecutedOrUnknownIdReturnsFalse) {
  Engine e;
  const auto id = e.schedule_at(1, [] {});
  e.run_until(core::kNever);
  EXPECT_FALSE(e.cancel(id));
  EXPECT_FALSE(e.cancel(0));
  EXPECT_FALSE(e.cancel(123456789));
}

TEST(Engine, StaleIdDoesNotCancelTheEventThatReusedItsSlot) {
  Engine e;
  const auto first = e.schedule_at(1, [] {});
  e.run_until(core::kNever);
  bool ran = false;
  const auto second = e.schedule_at(2, [&] { ran = true; });  // reuses the freed slot
  EXPECT_NE(first, second);
  EXPECT_FALSE(e.cancel(first));
  e.run_until(core::kNever);
  EXPECT_TRUE(ran);
}

TEST(Engine, RunUntilStopsBeforeLaterEventsAndAdvancesTimeToTheLimit) {
  Engine e;
  std::vector<core::Nanos> at;
  for (core::Nanos t : {5, 10, 15}) e.schedule_at(t, [&] { at.push_back(e.now()); });
  e.run_until(10);
  EXPECT_EQ(at, (std::vector<core::Nanos>{5, 10}));
  EXPECT_EQ(e.now(), 10);
  EXPECT_EQ(e.pending(), 1u);
  e.run_until(12);
  EXPECT_EQ(e.now(), 12);
  e.run_until(core::kNever);
  EXPECT_EQ(e.now(), 15);
  EXPECT_EQ(at.size(), 3u);
}

TEST(Engine, RunUntilWithNothingPendingMovesTimeToTheLimit) {
  Engine e;
  e.run_until(1000);
  EXPECT_EQ(e.now(), 1000);
}

TEST(Engine, StepRunsExactlyOneEvent) {
  Engine e;
  int count = 0;
  e.schedule_at(1, [&] { ++count; });
  e.schedule_at(2, [&] { ++count; });
  EXPECT_TRUE(e.step());
  EXPECT_EQ(count, 1);
  EXPECT_EQ(e.now(), 1);
  EXPECT_TRUE(e.step());
  EXPECT_FALSE(e.step());
  EXPECT_EQ(count, 2);
}

TEST(Engine, StepSkipsCancelledEvents) {
  Engine e;
  int ran = 0;
  const auto a = e.schedule_at(1, [&] { ran = 1; });
  e.schedule_at(2, [&] { ran = 2; });
  e.cancel(a);
  EXPECT_TRUE(e.step());
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(e.now(), 2);
}

TEST(Engine, StopReturnsAfterTheCurrentEventWithoutMovingTimeToTheLimit) {
  Engine e;
  int count = 0;
  e.schedule_at(1, [&] { ++count; });
  e.schedule_at(2, [&] {
    ++count;
    e.stop();
  });
  e.schedule_at(3, [&] { ++count; });
  e.run_until(100);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(e.now(), 2);
  e.run_until(100);  // a later run carries on
  EXPECT_EQ(count, 3);
  EXPECT_EQ(e.now(), 100);
}

TEST(Engine, ScheduleAfterIsRelativeToNow) {
  Engine e;
  core::Nanos seen = 0;
  e.schedule_at(40, [&] { e.schedule_after(2, [&] { seen = e.now(); }); });
  e.run_until(core::kNever);
  EXPECT_EQ(seen, 42);
}

TEST(Engine, CallbacksMayScheduleAndCancelWhileRunning) {
  Engine e;
  std::vector<int> order;
  device::TimerId victim = 0;
  e.schedule_at(1, [&] {
    order.push_back(1);
    e.schedule_at(1, [&] { order.push_back(2); });  // same time: after everything already there
    e.cancel(victim);
  });
  victim = e.schedule_at(1, [&] { order.push_back(99); });
  e.schedule_at(1, [&] { order.push_back(3); });
  e.run_until(core::kNever);
  EXPECT_EQ(order, (std::vector<int>{1, 3, 2}));
}

// Cancellations remove entries from the middle of the heap; the survivors must still run, in
// order.
TEST(Engine, SurvivesHeavyCancellationWithCorrectOrder) {
  Engine e;
  std::vector<core::Nanos> ran;
  std::vector<device::TimerId> ids;
  for (int i = 0; i < 20000; ++i) {
    const core::Nanos t = (i * 7919) % 10007;
    ids.push_back(e.schedule_at(t, [&ran, &e] { ran.push_back(e.now()); }));
  }
  std::size_t cancelled = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i % 5 != 0) cancelled += e.cancel(ids[i]) ? 1 : 0;
  }
  EXPECT_EQ(cancelled, 16000u);
  EXPECT_EQ(e.pending(), 4000u);
  e.run_until(core::kNever);
  ASSERT_EQ(ran.size(), 4000u);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
}

TEST(Engine, RescheduleMovesAnEventLaterOrEarlierKeepingItsCallback) {
  Engine e;
  std::vector<std::string> order;
  auto id = e.schedule_at(10, [&] { order.push_back("moved@" + std::to_string(e.now())); });
  e.schedule_at(20, [&] { order.push_back("b"); });
  e.schedule_at(30, [&] { order.push_back("c"); });
  id = e.reschedule(id, 25);  // later: past b
  ASSERT_NE(id, 0u);
  EXPECT_EQ(e.pending(), 3u);
  e.run_until(12);
  EXPECT_TRUE(order.empty());  // its old time passed without it running
  id = e.reschedule(id, 15);   // earlier again, before b
  e.run_until(core::kNever);
  EXPECT_EQ(order, (std::vector<std::string>{"moved@15", "b", "c"}));
  EXPECT_EQ(e.reschedule(id, 50), 0u);  // already ran
  EXPECT_FALSE(e.cancel(id));
}

TEST(Engine, RescheduleOrdersLikeCancelAndScheduleAnew) {
  // At equal times, a moved event runs after events scheduled before the move.
  for (core::Nanos target : {5, 40}) {
    Engine e;
    std::vector<int> order;
    auto id = e.schedule_at(20, [&] { order.push_back(1); });
    e.schedule_at(target, [&] { order.push_back(2); });
    e.reschedule(id, target);
    e.schedule_at(target, [&] { order.push_back(3); });
    e.run_until(core::kNever);
    EXPECT_EQ(order, (std::vector<int>{2, 1, 3})) << target;
  }
}

TEST(Engine, OldIdsOfAMovedEventAreStale) {
  Engine e;
  bool ran = false;
  const auto first = e.schedule_at(10, [&] { ran = true; });
  const auto moved = e.reschedule(first, 20);
  EXPECT_NE(first, moved);
  EXPECT_FALSE(e.cancel(first));
  EXPECT_EQ(e.reschedule(first, 5), 0u);
  EXPECT_TRUE(e.cancel(moved));
  e.run_until(core::kNever);
  EXPECT_FALSE(ran);
  EXPECT_EQ(e.pending(), 0u);
}

TEST(Engine, ManyReschedulesKeepOrderAndCount) {
  Engine e;
  core::RandomStream rng(3);
  std::vector<core::Nanos> ran;
  std::vector<device::TimerId> ids;
  for (int i = 0; i < 3000; ++i) {
    ids.push_back(e.schedule_at(static_cast<core::Nanos>(rng.below(100000)),
                                [&ran, &e] { ran.push_back(e.now()); }));
  }
  for (int round = 0; round < 10; ++round) {
    for (auto& id : ids) id = e.reschedule(id, static_cast<core::Nanos>(rng.below(100000)));
  }
  EXPECT_EQ(e.pending(), 3000u);
  e.run_until(core::kNever);
  EXPECT_EQ(ran.size(), 3000u);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
}

// A random mix of schedules and cancels, driven by a seeded stream, gives the same trace twice.
std::string random_trace(std::uint64_t seed) {
  Engine e;
  core::RandomStream rng(seed);
  std::string trace;
  std::vector<device::TimerId> live;
  std::function<void(int)> fire = [&](int id) {
    trace += fmt::format("{}@{} ", id, e.now());
    if (e.now() >= 5000) return;
    // One successor always, a second while the population is small; now and then a cancel
    // of some earlier timer (which may already have run).
    const int spawn = e.pending() < 32 ? 2 : 1;
    for (int k = 0; k < spawn; ++k) {
      const int next = static_cast<int>(rng.below(1000));
      live.push_back(
          e.schedule_after(static_cast<core::Nanos>(rng.below(50)), [&fire, next] { fire(next); }));
    }
    if (rng.below(3) == 0) e.cancel(live[rng.below(live.size())]);
  };
  e.schedule_at(0, [&] { fire(0); });
  e.run_until(core::kNever);
  return trace;
}

TEST(Engine, SameSeedGivesByteIdenticalTrace) {
  const std::string a = random_trace(7);
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, random_trace(7));
  EXPECT_NE(a, random_trace(8));
}

}  // namespace
}  // namespace tessera::sim
