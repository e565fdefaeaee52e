#include "tessera/mig/policy/time_fit.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "mig/policy/a100_layout_space.hpp"

namespace tessera::mig {
namespace {

using test::k1g10;
using test::k1g5;
using test::k2g10;
using test::k3g20;
using test::k4g20;
using test::k7g40;
using test::kGiB;

class TimeFitTest : public test::A100LayoutSpaceTest {
 protected:
  // A job that fits every profile, with its predicted seconds on one, three and seven compute
  // slices (two and four halfway between).
  // Each of its own work class (its index).
  static QueuedJob job(std::size_t index, double s1g, double s3g, double s7g) {
    QueuedJob q;
    q.job = index;
    q.work_class = index;
    q.name = fmt::format("j{}", index);
    q.need_bytes = kGiB;
    q.times = {{k1g5, core::seconds(s1g)},
               {k1g10, core::seconds(s1g)},
               {k2g10, core::seconds((s1g + s3g) / 2)},
               {k3g20, core::seconds(s3g)},
               {k4g20, core::seconds((s3g + s7g) / 2)},
               {k7g40, core::seconds(s7g)}};
    return q;
  }

  static void set_time(QueuedJob& q, int profile_id, double s) {
    for (ProfileTime& t : q.times) {
      if (t.profile_id == profile_id) t.time = core::seconds(s);
    }
  }

  SchedulerInput input(std::vector<QueuedJob> queue) const {
    SchedulerInput in;
    in.space = space_;
    in.current = space_->empty_state();
    in.scheme = Scheme::kTimeFit;
    in.queue = std::move(queue);
    return in;
  }

  StateId state_of(std::vector<Placement> instances) const {
    std::ranges::sort(instances, [](const Placement& a, const Placement& b) {
      return std::make_pair(a.start, a.profile_id) < std::make_pair(b.start, b.profile_id);
    });
    auto s = space_->find(Layout{instances});
    EXPECT_TRUE(s.has_value());
    return s.value_or(space_->empty_state());
  }

  // `in` with two jobs to an instance and `table_`'s slowdowns.
  SchedulerInput sharing(SchedulerInput in) const {
    in.jobs_per_instance = 2;
    in.co_runs = &table_;
    return in;
  }

  // Every pair of the work classes below `jobs` slowed by `slowdown` on every profile.
  void slow_every_pair(std::size_t jobs, double slowdown) {
    for (std::size_t a = 0; a < jobs; ++a) {
      for (std::size_t b = a + 1; b < jobs; ++b) {
        for (const int p : {k1g5, k1g10, k2g10, k3g20, k4g20, k7g40}) {
          table_[{a, b, p}] = Slowdowns{.first = slowdown, .second = slowdown};
        }
      }
    }
  }

  // 7g.40gb running job 0 alone, `left` seconds of work from now (0) on.
  static void running_alone_on_7g(SchedulerInput& in, double left) {
    in.busy = {kWhole};
    in.free_at[kWhole] = core::seconds(left);
    in.running[kWhole] = {RunningJob{.job = 0,
                                     .work_class = 0,
                                     .need_bytes = kGiB,
                                     .term = {.begins = 0, .work = core::seconds(left)}}};
  }

  static constexpr Placement kWhole{k7g40, 0};
  CoRunTable table_;
  CoRunTable empty_;

  static int profile_of(const Decisions& d, std::size_t job) {
    for (const StartDecision& s : d.starts) {
      if (s.job == job) return s.plan.instance.profile_id;
    }
    return -1;
  }
};

TEST_F(TimeFitTest, AJobThatScalesGetsTheWholeGpuNotTheSmallestSliceItsMemoryFits) {
  // Alone, a job that runs 7x faster on 7g.40gb goes there; MIGM's scheme B would give it 1g.5gb.
  const Decisions d = schedule(input({job(0, 70, 23, 10)}));
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(profile_of(d, 0), k7g40);
  const Decisions b = [&] {
    SchedulerInput in = input({job(0, 70, 23, 10)});
    in.scheme = Scheme::kB;
    return schedule(in);
  }();
  EXPECT_EQ(b.starts.at(0).plan.instance.profile_id, k1g5);
}

TEST_F(TimeFitTest, JobsThatDoNotScaleRunSideBySideOnSmallSlices) {
  // Seven jobs barely faster on a larger slice: seven slices at once finish the queue first.
  std::vector<QueuedJob> queue;
  for (std::size_t i = 0; i < 7; ++i) queue.push_back(job(i, 100, 95, 90));
  const Decisions d = schedule(input(queue));
  EXPECT_EQ(d.starts.size(), 7U);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(profile_of(d, i), k1g5) << "job " << i;
}

TEST_F(TimeFitTest, AJobWaitsForABusyInstanceWhereItFinishesSooner) {
  // 4g.20gb is busy for one more second; the job runs 10 s there against 100 s on the idle
  // 3g.20gb.
  QueuedJob q = job(0, 300, 100, 80);
  set_time(q, k4g20, 10);
  SchedulerInput in = input({q});
  const Placement big{k4g20, 0};
  in.current = state_of({big, {k3g20, 4}});
  in.busy = {big};
  in.free_at[big] = core::seconds(1);
  EXPECT_TRUE(schedule(in).starts.empty());
  // Busy for 200 s more, it is not worth waiting for: the job starts on the idle 3g.20gb.
  in.free_at[big] = core::seconds(200);
  const Decisions d = schedule(in);
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].plan.instance, (Placement{k3g20, 4}));
  EXPECT_EQ(d.starts[0].plan.kind, PlanKind::kReuse);
}

TEST_F(TimeFitTest, AReconfigurationIsMadeOnlyWhenItsGainOutweighsItsCost) {
  // Seven idle 1g.5gb instances. A job 5% faster on 7g.40gb stays on one of them (destroying
  // seven and creating one costs 4.5 s); one 7x faster is worth the fusion.
  std::vector<Placement> ones;
  for (int s = 0; s < 7; ++s) ones.push_back({k1g5, s});
  SchedulerInput in = input({job(0, 10, 9.8, 9.5)});
  in.current = state_of(ones);
  Decisions d = schedule(in);
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].plan.kind, PlanKind::kReuse);
  EXPECT_EQ(d.starts[0].plan.instance.profile_id, k1g5);

  in.queue = {job(0, 70, 23, 10)};
  d = schedule(in);
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].plan.instance.profile_id, k7g40);
  EXPECT_EQ(d.starts[0].plan.kind, PlanKind::kFusion);
  EXPECT_EQ(d.starts[0].plan.destroy.size(), 7U);
}

TEST_F(TimeFitTest, AJobWaitingPastTheAgeingBoundStopsNewStartsUntilItFits) {
  // 1g.5gb@0 is busy; a job needing 40 GiB (7g.40gb only) cannot start beside it, and a small job
  // could. Before the bound the small job starts; after it nothing new starts, so the GPU drains.
  QueuedJob big = job(0, 70, 23, 10);
  big.need_bytes = 40 * kGiB;
  QueuedJob small = job(1, 5, 5, 5);
  small.submitted = core::seconds(100);
  SchedulerInput in = input({big, small});
  const Placement busy{k1g5, 0};
  in.current = state_of({busy});
  in.busy = {busy};
  in.free_at[busy] = core::seconds(5000);
  in.time_fit.ageing = core::seconds(600);
  in.now = core::seconds(200);
  Decisions d = schedule(in);
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].job, 1U);
  in.now = core::seconds(600);
  d = schedule(in);
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.give_ups.empty());
}

TEST_F(TimeFitTest, JobsNoProfileHoldsAreGivenUpWithTheReason) {
  QueuedJob huge = job(0, 1, 1, 1);
  huge.need_bytes = 64 * kGiB;
  const Decisions d = schedule(input({huge, job(1, 10, 5, 2)}));
  ASSERT_EQ(d.give_ups.size(), 1U);
  EXPECT_EQ(d.give_ups[0].job, 0U);
  EXPECT_NE(d.give_ups[0].reason.find("7g.40gb"), std::string::npos) << d.give_ups[0].reason;
  EXPECT_EQ(d.starts.size(), 1U);
}

using TimeFitShareTest = TimeFitTest;

TEST_F(TimeFitShareTest, TwoJobsThatBarelySlowEachOtherShareOneInstance) {
  // Apart, the second instance is ready a create later (14 s); together on one, each 2% slower,
  // both end at 13.2 s.
  slow_every_pair(2, 1.02);
  const Decisions d = schedule(sharing(input({job(0, 10, 10, 10), job(1, 10, 10, 10)})));
  ASSERT_EQ(d.starts.size(), 2U);
  EXPECT_EQ(d.starts[0].plan.kind, PlanKind::kPlace);
  EXPECT_EQ(d.starts[1].plan.kind, PlanKind::kShare);
  EXPECT_EQ(d.starts[1].plan.instance, d.starts[0].plan.instance);
  EXPECT_TRUE(d.starts[1].plan.destroy.empty());
  EXPECT_EQ(d.starts[1].plan.result, d.starts[0].plan.result);
  EXPECT_NE(d.starts[0].job, d.starts[1].job);
  // Without the pair's slowdowns, or with one job to an instance, they run apart.
  for (SchedulerInput in :
       {input({job(0, 10, 10, 10), job(1, 10, 10, 10)}), [&] {
          SchedulerInput no_table = sharing(input({job(0, 10, 10, 10), job(1, 10, 10, 10)}));
          no_table.co_runs = &empty_;
          return no_table;
        }()}) {
    const Decisions apart = schedule(in);
    ASSERT_EQ(apart.starts.size(), 2U);
    EXPECT_NE(apart.starts[1].plan.kind, PlanKind::kShare);
    EXPECT_NE(apart.starts[1].plan.instance, apart.starts[0].plan.instance);
  }
}

TEST_F(TimeFitShareTest, ThePairSharesOnlyAnInstanceThatHoldsBoth) {
  slow_every_pair(2, 1.02);
  QueuedJob a = job(0, 10, 10, 10);
  QueuedJob b = job(1, 10, 10, 10);
  a.need_bytes = b.need_bytes = 6 * kGiB;
  const Decisions d = schedule(sharing(input({a, b})));
  ASSERT_EQ(d.starts.size(), 2U);
  ASSERT_EQ(d.starts[1].plan.kind, PlanKind::kShare);
  const hw::MigProfile* p = space_->geometry().find(d.starts[1].plan.instance.profile_id);
  ASSERT_NE(p, nullptr);
  EXPECT_GE(p->memory_bytes, 12 * kGiB) << p->name;
}

TEST_F(TimeFitShareTest, AQueuedJobJoinsAJobRunningAloneRatherThanWaitForIt) {
  // 7g.40gb runs job 0 for 100 s more; job 1 beside it (10% slower each) ends at 13 s.
  slow_every_pair(2, 1.1);
  SchedulerInput in = sharing(input({job(1, 10, 10, 10)}));
  in.current = state_of({kWhole});
  running_alone_on_7g(in, 100);
  const Decisions d = schedule(in);
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].job, 1U);
  EXPECT_EQ(d.starts[0].plan.kind, PlanKind::kShare);
  EXPECT_EQ(d.starts[0].plan.instance, kWhole);
  EXPECT_EQ(d.starts[0].plan.result, in.current);
  // With one job to an instance it waits.
  in.jobs_per_instance = 1;
  EXPECT_TRUE(schedule(in).starts.empty());
}

TEST_F(TimeFitShareTest, AnInstanceRunningTwoJobsTakesNoThird) {
  slow_every_pair(3, 1.1);
  SchedulerInput in = sharing(input({job(2, 10, 10, 10)}));
  in.current = state_of({kWhole});
  running_alone_on_7g(in, 100);
  in.running[kWhole].push_back(RunningJob{.job = 1,
                                          .work_class = 1,
                                          .need_bytes = kGiB,
                                          .term = {.begins = 0, .work = core::seconds(50)}});
  EXPECT_TRUE(schedule(in).starts.empty());
}

TEST_F(TimeFitShareTest, AJobWaitsToJoinTheJobAPairLeavesWhenThatIsSooner) {
  // 4g.20gb runs jobs 0 (5 s of work) and 1 (100 s), each 10% slower beside the other: job 0
  // ends at 5.5 s and job 1 runs alone after. Job 2 (10 s on 4g.20gb, 100 s on the idle 3g.20gb)
  // joins job 1 then and ends near 19 s, rather than start now on 3g.20gb and end at 102 s.
  slow_every_pair(3, 1.1);
  QueuedJob q = job(2, 300, 100, 80);
  set_time(q, k4g20, 10);
  SchedulerInput in = sharing(input({q}));
  const Placement four{k4g20, 0};
  in.current = state_of({four, {k3g20, 4}});
  in.busy = {four};
  in.running[four] = {RunningJob{.job = 0,
                                 .work_class = 0,
                                 .need_bytes = kGiB,
                                 .term = {.work = core::seconds(5), .slowdown = 1.1}},
                      RunningJob{.job = 1,
                                 .work_class = 1,
                                 .need_bytes = kGiB,
                                 .term = {.work = core::seconds(100), .slowdown = 1.1}}};
  const auto ends = shared_ends(in.running[four][0].term, in.running[four][1].term);
  in.free_at[four] = std::max(ends.first, ends.second);
  EXPECT_TRUE(schedule(in).starts.empty());
}

TEST_F(TimeFitShareTest, AJobJoinsOnlyWhereTheQueueFinishesSooner) {
  // Job 0 has 5 s left; waiting for it, job 1 ends at 17 s. Beside it, each 3x slower, job 0 ends
  // at 11 s and job 1 at 18 s: it waits.
  slow_every_pair(2, 3);
  SchedulerInput in = sharing(input({job(1, 10, 10, 10)}));
  in.current = state_of({kWhole});
  running_alone_on_7g(in, 5);
  EXPECT_TRUE(schedule(in).starts.empty());
  // Each 2x slower, job 0 ends at 8 s (3 s late) and job 1 at 15 s: the queue ends 2 s sooner,
  // and it joins.
  slow_every_pair(2, 2);
  const Decisions d = schedule(in);
  ASSERT_EQ(d.starts.size(), 1U);
  EXPECT_EQ(d.starts[0].plan.kind, PlanKind::kShare);
}

}  // namespace
}  // namespace tessera::mig
