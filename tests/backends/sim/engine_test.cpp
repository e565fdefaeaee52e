#include "tessera/backends/sim/engine.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera::sim {

// Reaches into the engine to test the sequence-number wrap, which a run meets only after 2^32
// schedules.
struct EngineTestPeer {
  // Moves the sequence counter forward to `left` numbers before the wrap.
  static void near_wrap(Engine& e, std::uint64_t left) {
    e.next_seq_ = std::max(e.next_seq_, Engine::kSeqLimit - left);
  }
};

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

TEST(Engine, CancelOfTheEarliestEventLetsTheNextOneRunFirst) {
  Engine e;
  std::vector<int> order;
  std::vector<device::TimerId> ids;
  for (int i = 0; i < 40; ++i) {
    ids.push_back(e.schedule_at(100 - i, [&order, i] { order.push_back(i); }));
  }
  EXPECT_TRUE(e.cancel(ids[39]));  // time 61: the root of the heap
  EXPECT_TRUE(e.cancel(ids[38]));  // time 62: the root again
  ASSERT_TRUE(e.step());
  EXPECT_EQ(e.now(), 63);
  EXPECT_EQ(order, (std::vector<int>{37}));
  EXPECT_EQ(e.pending(), 37u);
}

TEST(Engine, CancelOfTheLastEntryLeavesTheRestInOrder) {
  Engine e;
  std::vector<core::Nanos> ran;
  device::TimerId last = 0;
  // Increasing times never sift up, so the latest schedule is the heap's last entry.
  for (int i = 0; i < 21; ++i) last = e.schedule_at(i, [&] { ran.push_back(e.now()); });
  EXPECT_TRUE(e.cancel(last));
  EXPECT_EQ(e.pending(), 20u);
  e.run_until(core::kNever);
  ASSERT_EQ(ran.size(), 20u);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
  EXPECT_EQ(ran.back(), 19);
}

TEST(Engine, RescheduleDeepInALargeQueueMovesBothWays) {
  Engine e;
  std::vector<int> order;
  std::vector<device::TimerId> ids;
  for (int i = 0; i < 1000; ++i) {
    ids.push_back(e.schedule_at(10 * (i + 1), [&order, i] { order.push_back(i); }));
  }
  ids[999] = e.reschedule(ids[999], 5);    // from the bottom to the root
  ids[0] = e.reschedule(ids[0], 100'000);  // from the root to the bottom
  ids[300] = e.reschedule(ids[300], 7);    // from the middle to just below the root
  ids[500] = e.reschedule(ids[500], 20);   // onto event 1's time: runs after it
  e.run_until(core::kNever);
  ASSERT_EQ(order.size(), 1000u);
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 6),
            (std::vector<int>{999, 300, 1, 500, 2, 3}));
  EXPECT_EQ(order.back(), 0);
  EXPECT_EQ(e.now(), 100'000);
}

// The sequence numbers of pending events are renumbered when the counter wraps: same-time
// events still run in schedule order, and ids given out before the wrap stay good.
TEST(Engine, SequenceWrapKeepsScheduleOrderAndIds) {
  Engine e;
  std::vector<int> order;
  std::vector<device::TimerId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(e.schedule_at(10, [&order, i] { order.push_back(i); }));
  // Moved in reverse, so schedule order (5, 4, ..., 0) differs from where they sit in the heap.
  for (int i = 5; i >= 0; --i) ids[i] = e.reschedule(ids[i], 10);
  const auto doomed = e.schedule_at(10, [&] { order.push_back(99); });
  EngineTestPeer::near_wrap(e, 1);
  for (int i = 6; i < 9; ++i) ids.push_back(e.schedule_at(10, [&order, i] { order.push_back(i); }));
  EXPECT_TRUE(e.cancel(doomed));  // an id from before the wrap still works
  ids[5] = e.reschedule(ids[5], 10);
  EXPECT_NE(ids[5], 0u);
  e.run_until(core::kNever);
  EXPECT_EQ(order, (std::vector<int>{4, 3, 2, 1, 0, 6, 7, 8, 5}));
}

// A random mix of schedule, cancel, reschedule and step, checked at every step against a plain
// ordered map keyed by (time, order of scheduling). Times are drawn from a narrow window so that
// ties and clamps to now are common.
void check_against_reference(std::uint64_t seed, bool wrap_often) {
  using Key = std::pair<core::Nanos, std::uint64_t>;
  struct Timer {
    device::TimerId id;
    Key key;
    int label;
  };
  Engine e;
  core::RandomStream rng(seed);
  std::map<Key, std::size_t> ref;  // pending events -> index in timers
  std::vector<Timer> timers;       // every id handed out, live or not
  std::vector<int> ran;
  std::uint64_t ref_seq = 0;
  int next_label = 0;
  const auto draw_time = [&] { return e.now() + static_cast<core::Nanos>(rng.below(64)) - 8; };
  const auto pick = [&]() -> std::size_t {
    switch (rng.below(3)) {
      case 0: return ref.empty() ? 0 : ref.begin()->second;  // the earliest pending event
      case 1: return timers.size() - 1 - rng.below(std::min<std::size_t>(timers.size(), 32));
      default: return rng.below(timers.size());
    }
  };
  for (int op = 0; op < 30000; ++op) {
    if (wrap_often && op % 250 == 0) EngineTestPeer::near_wrap(e, rng.below(4));
    const auto kind = rng.below(10);
    if (kind < 4 || timers.empty()) {
      const core::Nanos t = draw_time();
      const int label = next_label++;
      const auto id = e.schedule_at(t, [&ran, label] { ran.push_back(label); });
      ASSERT_NE(id, 0u);
      timers.push_back({id, {std::max(t, e.now()), ref_seq++}, label});
      ref[timers.back().key] = timers.size() - 1;
    } else if (kind < 6) {
      const std::size_t k = pick();
      const bool live = ref.count(timers[k].key) == 1;
      ASSERT_EQ(e.cancel(timers[k].id), live) << "op " << op;
      ref.erase(timers[k].key);
    } else if (kind < 8) {
      const std::size_t k = pick();
      const bool live = ref.count(timers[k].key) == 1;
      const core::Nanos t = draw_time();
      const auto id = e.reschedule(timers[k].id, t);
      ASSERT_EQ(id != 0, live) << "op " << op;
      if (live) {
        ref.erase(timers[k].key);
        timers.push_back({id, {std::max(t, e.now()), ref_seq++}, timers[k].label});
        ref[timers.back().key] = timers.size() - 1;
      }
    } else {
      ASSERT_EQ(e.step(), !ref.empty());
      if (!ref.empty()) {
        const auto [key, k] = *ref.begin();
        ASSERT_EQ(ran.back(), timers[k].label) << "op " << op;
        ASSERT_EQ(e.now(), key.first);
        ref.erase(ref.begin());
      }
    }
    ASSERT_EQ(e.pending(), ref.size()) << "op " << op;
  }
  EXPECT_GT(ref.size(), 1000u);  // the heap was deep, not a handful of entries
  std::vector<int> expected = ran;
  for (const auto& [key, k] : ref) expected.push_back(timers[k].label);
  e.run_until(core::kNever);
  EXPECT_EQ(ran, expected);
}

TEST(Engine, MatchesAReferenceQueueUnderRandomOperations) {
  check_against_reference(11, false);
}

TEST(Engine, MatchesAReferenceQueueAcrossManySequenceWraps) {
  check_against_reference(12, true);
}

}  // namespace
}  // namespace tessera::sim
