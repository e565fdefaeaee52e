// The schedule search from a given moment: a job joins a running one where the pair gains and
// waits for it where it does not; the manager destroys only to make an instance, so no schedule
// destroys ahead of time; of two schedules that end together the one with the smaller sum of
// ends wins; a job no profile holds leaves no schedule; a search out of steps says so.

#include "tessera/mig/policy/schedule_search.hpp"

#include <gtest/gtest.h>

#include "a100_layout_space.hpp"

namespace tessera::mig {
namespace {

using test::k3g20;
using test::k7g40;

constexpr SearchCosts kCosts{.create_time = core::seconds(1),
                             .destroy_time = core::millis(500),
                             .start_time = core::seconds(2)};

class ScheduleSearch : public test::A100LayoutSpaceTest {
 protected:
  StateId state(const Layout& layout) const {
    const auto s = space_->find(layout);
    EXPECT_TRUE(s.has_value());
    return s.value_or(space_->empty_state());
  }
};

// A 7g.40gb running a job of class 0 with 10 s of work left; a job of class 1 (10 s on 7g) queued.
SearchFrom one_running_job(StateId layout) {
  return {.now = 0,
          .driver_free = 0,
          .layout = layout,
          .instances = {{.placement = {k7g40, 0},
                         .ready = 0,
                         .runs = {{.work_class = 0,
                                   .need_bytes = 0,
                                   .term = {.begins = 0, .work = core::seconds(10)}}}}}};
}

TEST_F(ScheduleSearch, AJobJoinsARunningOneWhereThePairGainsAndWaitsWhereItDoesNot) {
  const std::vector<SearchJob> queued{
      {.work_class = 1, .need_bytes = 0, .times = {{k7g40, core::seconds(10)}}}};
  const SearchFrom from = one_running_job(state({{{k7g40, 0}}}));
  // Beside it at 1.5x each: the partner runs alone for the 2 s start, then 8 s of work take
  // 12 s (to 14 s), in which the joiner does 8 s; its last 2 s end at 16 s.
  CoRunTable gains{{{0, 1, k7g40}, {.first = 1.5, .second = 1.5}}};
  SearchResult r = search_schedules(*space_, queued, from, &gains, 2, kCosts, {});
  ASSERT_TRUE(r.makespan.has_value());
  EXPECT_EQ(*r.makespan, core::seconds(16));
  ASSERT_EQ(r.schedule.size(), 1u);
  EXPECT_EQ(r.schedule[0].kind, SearchStep::Kind::kJoin);
  EXPECT_FALSE(r.schedule[0].beside.has_value());  // the job running at the start
  EXPECT_TRUE(r.complete);
  // At 2.5x each a pair does less than one job alone: waiting for the 7g.40gb ends at 22 s.
  CoRunTable loses{{{0, 1, k7g40}, {.first = 2.5, .second = 2.5}}};
  r = search_schedules(*space_, queued, from, &loses, 2, kCosts, {});
  ASSERT_TRUE(r.makespan.has_value());
  EXPECT_EQ(*r.makespan, core::seconds(22));
  ASSERT_EQ(r.schedule.size(), 1u);
  EXPECT_EQ(r.schedule[0].kind, SearchStep::Kind::kStart);
  EXPECT_EQ(r.schedule[0].round, 1u);
  EXPECT_EQ(r.schedule[0].at, core::seconds(10));
  // With one job to an instance the table is not read.
  r = search_schedules(*space_, queued, from, &gains, 1, kCosts, {});
  EXPECT_EQ(r.makespan, core::seconds(22));
}

TEST_F(ScheduleSearch, InstancesAreDestroyedOnlyToMakeOne) {
  // A 3g.20gb runs a job until 5 s beside an idle one; the queued job runs only on 7g.40gb.
  // Destroying the idle 3g.20gb at once would have the 7g.40gb ready 0.5 s sooner, but the
  // manager destroys only with a create: both go at 5 s, and the job ends at 5 + 1 + 1 + 2 + 10.
  const SearchFrom from{
      .now = 0,
      .driver_free = 0,
      .layout = state({{{k3g20, 0}, {k3g20, 4}}}),
      .instances = {{.placement = {k3g20, 0}, .ready = 0, .runs = {}},
                    {.placement = {k3g20, 4},
                     .ready = 0,
                     .runs = {{.work_class = 0,
                               .need_bytes = 0,
                               .term = {.begins = 0, .work = core::seconds(5)}}}}}};
  const std::vector<SearchJob> queued{
      {.work_class = 1, .need_bytes = 0, .times = {{k7g40, core::seconds(10)}}}};
  const SearchResult r = search_schedules(*space_, queued, from, nullptr, 1, kCosts, {});
  ASSERT_TRUE(r.makespan.has_value());
  EXPECT_EQ(*r.makespan, core::seconds(19));
  ASSERT_EQ(r.schedule.size(), 3u);
  for (const SearchStep& s : r.schedule) EXPECT_EQ(s.at, core::seconds(5));
  EXPECT_EQ(r.schedule[0].kind, SearchStep::Kind::kDestroy);
  EXPECT_EQ(r.schedule[1].kind, SearchStep::Kind::kDestroy);
  EXPECT_EQ(r.schedule[2].kind, SearchStep::Kind::kMake);
}

TEST_F(ScheduleSearch, OfSchedulesThatEndTogetherTheSmallerSumOfEndsWins) {
  // A long and a short job that run only on 7g.40gb, one after the other: either order ends at
  // 1 + 2 + 20 + 2 + 2 s, and the short one first ends its jobs at 5 s and 27 s, not 23 and 27.
  const std::vector<SearchJob> queued{
      {.work_class = 0, .need_bytes = 0, .times = {{k7g40, core::seconds(20)}}},
      {.work_class = 1, .need_bytes = 0, .times = {{k7g40, core::seconds(2)}}}};
  const SearchFrom from{
      .now = 0, .driver_free = 0, .layout = space_->empty_state(), .instances = {}};
  const SearchResult r = search_schedules(*space_, queued, from, nullptr, 1, kCosts, {});
  ASSERT_TRUE(r.makespan.has_value());
  EXPECT_EQ(*r.makespan, core::seconds(27));
  EXPECT_EQ(r.sum, core::seconds(32));
  ASSERT_EQ(r.schedule.size(), 2u);
  EXPECT_EQ(r.schedule[0].job, 1u);
  EXPECT_EQ(r.schedule[0].kind, SearchStep::Kind::kMake);
}

TEST_F(ScheduleSearch, AJobNoProfileHoldsLeavesNoSchedule) {
  const std::vector<SearchJob> queued{
      {.work_class = 0, .need_bytes = 0, .times = {{k7g40, core::seconds(1)}}},
      {.work_class = 1, .need_bytes = 0, .times = {}}};
  const SearchFrom from{
      .now = 0, .driver_free = 0, .layout = space_->empty_state(), .instances = {}};
  const SearchResult r = search_schedules(*space_, queued, from, nullptr, 1, kCosts, {});
  EXPECT_FALSE(r.makespan.has_value());
  EXPECT_TRUE(r.schedule.empty());
}

TEST_F(ScheduleSearch, ASearchOutOfStepsSaysSo) {
  std::vector<SearchJob> queued;
  for (std::size_t j = 0; j < 5; ++j) {
    queued.push_back({.work_class = j,
                      .need_bytes = 0,
                      .times = {{k3g20, core::seconds(10 + j)}, {k7g40, core::seconds(5 + j)}}});
  }
  const SearchFrom from{
      .now = 0, .driver_free = 0, .layout = space_->empty_state(), .instances = {}};
  const SearchResult full = search_schedules(*space_, queued, from, nullptr, 1, kCosts, {});
  const SearchResult cut =
      search_schedules(*space_, queued, from, nullptr, 1, kCosts, {.max_steps = 20});
  EXPECT_TRUE(full.complete);
  EXPECT_FALSE(cut.complete);
  EXPECT_GT(full.steps, 20);
  ASSERT_TRUE(full.makespan && cut.makespan);
  EXPECT_LE(*full.makespan, *cut.makespan);
}

}  // namespace
}  // namespace tessera::mig
