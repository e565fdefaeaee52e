#include "tessera/mig/policy/scheduler.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "mig/policy/a100_layout_space.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/registry.hpp"

namespace tessera::mig {
namespace {

using test::k1g10;
using test::k1g5;
using test::k2g10;
using test::k3g20;
using test::k4g20;
using test::k7g40;
using test::kGiB;

class SchedulerTest : public test::A100LayoutSpaceTest {
 protected:
  static QueuedJob job(std::size_t index, double need_gib, core::Nanos submitted = 0) {
    QueuedJob q;
    q.job = index;
    q.name = fmt::format("j{}", index);
    q.need_bytes = static_cast<std::int64_t>(need_gib * kGiB);
    q.submitted = submitted;
    return q;
  }

  static StateId state_of(std::vector<Placement> instances) {
    std::ranges::sort(instances, [](const Placement& a, const Placement& b) {
      return std::make_pair(a.start, a.profile_id) < std::make_pair(b.start, b.profile_id);
    });
    auto s = space_->find(Layout{instances});
    EXPECT_TRUE(s.has_value());
    return s.value_or(space_->empty_state());
  }

  SchedulerInput input(Scheme scheme, std::vector<QueuedJob> queue) const {
    SchedulerInput in;
    in.space = space_;
    in.current = space_->empty_state();
    in.scheme = scheme;
    in.queue = std::move(queue);
    return in;
  }

  static std::vector<std::size_t> started(const Decisions& d) {
    std::vector<std::size_t> out;
    for (const StartDecision& s : d.starts) out.push_back(s.job);
    return out;
  }

  static std::vector<int> profiles(const Decisions& d) {
    std::vector<int> out;
    for (const StartDecision& s : d.starts) out.push_back(s.plan.instance.profile_id);
    return out;
  }
};

TEST_F(SchedulerTest, ProfileIsTheSmallestWithEnoughMemoryAndNotBelowTheMinimum) {
  EXPECT_EQ(profile_for(*space_, 0, std::nullopt)->id, k1g5);
  EXPECT_EQ(profile_for(*space_, 5 * kGiB, std::nullopt)->id, k1g5);
  EXPECT_EQ(profile_for(*space_, 5 * kGiB + 1, std::nullopt)->id, k1g10);
  EXPECT_EQ(profile_for(*space_, 18 * kGiB, std::nullopt)->id, k3g20);
  EXPECT_EQ(profile_for(*space_, 1 * kGiB, k3g20)->id, k3g20);
  EXPECT_EQ(profile_for(*space_, 41 * kGiB, std::nullopt), nullptr);
  // The next larger profile has strictly more memory: 2g.10gb is skipped after 1g.10gb.
  EXPECT_EQ(next_larger_profile(*space_, k1g5)->id, k1g10);
  EXPECT_EQ(next_larger_profile(*space_, k1g10)->id, k3g20);
  EXPECT_EQ(next_larger_profile(*space_, k2g10)->id, k3g20);
  EXPECT_EQ(next_larger_profile(*space_, k4g20)->id, k7g40);
  EXPECT_EQ(next_larger_profile(*space_, k7g40), nullptr);
}

TEST_F(SchedulerTest, SchemeBStartsInSubmissionOrderOnEachJobsSmallestProfile) {
  const Decisions d = schedule(input(Scheme::kB, {job(2, 4, 20), job(0, 18, 0), job(1, 8, 10)}));
  EXPECT_TRUE(d.give_ups.empty());
  EXPECT_EQ(started(d), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(profiles(d), (std::vector<int>{k3g20, k1g10, k1g5}));
}

TEST_F(SchedulerTest, SchemeBBlocksBehindTheHeadWithoutBackfill) {
  SchedulerInput in = input(Scheme::kB, {job(0, 30), job(1, 4)});
  const Placement busy{k3g20, 4};
  in.current = state_of({busy});
  in.busy = {busy};
  const Decisions d = schedule(in);
  // The 30 GiB head needs the 7g.40gb, which the busy 3g.20gb prevents; the 4 GiB job would fit
  // beside it but must wait.
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.give_ups.empty());
}

TEST_F(SchedulerTest, SchemeARunsTheSmallestGroupFirstAtTheCostOfSubmissionOrder) {
  std::vector<QueuedJob> queue{job(0, 18, 0)};
  for (std::size_t i = 1; i <= 8; ++i) queue.push_back(job(i, 4, static_cast<core::Nanos>(i)));
  const Decisions a = schedule(input(Scheme::kA, queue));
  // Seven 1g.5gb fill the GPU; the eighth small job and the 18 GiB one, submitted first, wait.
  EXPECT_EQ(started(a), (std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(profiles(a), std::vector<int>(7, k1g5));

  // Scheme B on the same queue starts the 18 GiB job first.
  const Decisions b = schedule(input(Scheme::kB, queue));
  ASSERT_FALSE(b.starts.empty());
  EXPECT_EQ(b.starts.front().job, 0u);
  EXPECT_EQ(b.starts.front().plan.instance.profile_id, k3g20);
}

TEST_F(SchedulerTest, SchemeAMovesToTheNextGroupOnceTheCurrentOneIsAllStarted) {
  const Decisions d = schedule(input(Scheme::kA, {job(0, 18, 0), job(1, 4, 1), job(2, 9, 2)}));
  EXPECT_EQ(started(d), (std::vector<std::size_t>{1, 2, 0}));
  EXPECT_EQ(profiles(d), (std::vector<int>{k1g5, k1g10, k3g20}));
}

TEST_F(SchedulerTest, RestartedJobsGoFirstInEveryScheme) {
  QueuedJob restarted = job(5, 4, 100);
  restarted.restart = true;
  restarted.min_profile_id = k3g20;
  for (Scheme scheme : {Scheme::kA, Scheme::kB, Scheme::kSequential}) {
    const Decisions d = schedule(input(scheme, {job(0, 2, 0), restarted}));
    ASSERT_FALSE(d.starts.empty()) << to_string(scheme);
    EXPECT_EQ(d.starts.front().job, 5u) << to_string(scheme);
  }
  const Decisions b = schedule(input(Scheme::kB, {job(0, 2, 0), restarted}));
  EXPECT_EQ(b.starts.front().plan.instance.profile_id, k3g20);
}

TEST_F(SchedulerTest, SequentialRunsOneJobAtATimeOnTheLargestProfile) {
  SchedulerInput in = input(Scheme::kSequential, {job(1, 1, 5), job(0, 2, 0)});
  Decisions d = schedule(in);
  EXPECT_EQ(started(d), (std::vector<std::size_t>{0}));
  EXPECT_EQ(profiles(d), (std::vector<int>{k7g40}));

  in.current = d.starts.front().plan.result;
  in.busy = {d.starts.front().plan.instance};
  in.queue = {job(1, 1, 5)};
  d = schedule(in);
  EXPECT_TRUE(d.starts.empty());
}

TEST_F(SchedulerTest, AJobLargerThanTheGpuIsGivenUpWithTheLargestInstanceNamed) {
  for (Scheme scheme : {Scheme::kA, Scheme::kB, Scheme::kSequential}) {
    const Decisions d = schedule(input(scheme, {job(0, 52), job(1, 4)}));
    ASSERT_EQ(d.give_ups.size(), 1u) << to_string(scheme);
    EXPECT_EQ(d.give_ups[0].job, 0u);
    EXPECT_EQ(d.give_ups[0].reason, "needs 52 GiB; the largest instance, 7g.40gb, has 40 GiB");
    // Giving up does not block the queue.
    EXPECT_EQ(started(d), (std::vector<std::size_t>{1})) << to_string(scheme);
  }
}

TEST_F(SchedulerTest, StaticTakesTheSmallestFreeInstanceWithBackfillAndNamesTheLayout) {
  const Layout layout{{{k1g5, 0}, {k1g5, 1}, {k2g10, 2}, {k3g20, 4}}};
  SchedulerInput in = input(Scheme::kStatic, {job(0, 30, 0), job(1, 8, 1), job(2, 4, 2),
                                              job(3, 4, 3), job(4, 4, 4), job(5, 15, 5)});
  in.static_layout = layout;
  in.current = state_of(layout.instances);
  const Decisions d = schedule(in);
  ASSERT_EQ(d.give_ups.size(), 1u);
  EXPECT_EQ(d.give_ups[0].job, 0u);
  EXPECT_NE(d.give_ups[0].reason.find(describe(space_->geometry(), layout)), std::string::npos)
      << d.give_ups[0].reason;
  EXPECT_NE(d.give_ups[0].reason.find("needs 30 GiB"), std::string::npos) << d.give_ups[0].reason;
  // Job 4 takes the 3g.20gb (the only free one large enough); job 5 then finds nothing free.
  EXPECT_EQ(started(d), (std::vector<std::size_t>{1, 2, 3, 4}));
  std::vector<Placement> got;
  for (const StartDecision& s : d.starts) {
    EXPECT_EQ(s.plan.kind, PlanKind::kReuse);
    EXPECT_TRUE(s.plan.destroy.empty());
    got.push_back(s.plan.instance);
  }
  EXPECT_EQ(got, (std::vector<Placement>{{k2g10, 2}, {k1g5, 0}, {k1g5, 1}, {k3g20, 4}}));
}

TEST_F(SchedulerTest, StaticBackfillsPastAJobWhoseInstanceIsBusy) {
  const Layout layout{{{k1g5, 0}, {k3g20, 4}}};
  SchedulerInput in = input(Scheme::kStatic, {job(0, 15, 0), job(1, 4, 1)});
  in.static_layout = layout;
  in.current = state_of(layout.instances);
  in.busy = {{k3g20, 4}};
  const Decisions d = schedule(in);
  EXPECT_TRUE(d.give_ups.empty());
  EXPECT_EQ(started(d), (std::vector<std::size_t>{1}));
}

std::string serialize(const Decisions& d) {
  std::string out;
  auto to = std::back_inserter(out);
  for (const GiveUp& g : d.give_ups) fmt::format_to(to, "give up {}{};", g.job, g.reason);
  for (const StartDecision& s : d.starts) {
    fmt::format_to(to, "start {} {} {}@{} ->{} d", s.job, to_string(s.plan.kind),
                   s.plan.instance.profile_id, s.plan.instance.start, s.plan.result);
    for (const Placement& p : s.plan.destroy) fmt::format_to(to, "{}@{},", p.profile_id, p.start);
    out += ";";
  }
  return out;
}

// Random states (some instances busy, some idle) and random queues: no decision touches a busy
// instance, each plan leads to a valid state holding its instance, the instances handed out are
// distinct, and the same input gives the same output.
TEST_F(SchedulerTest, DecisionsNeverTouchBusyInstancesAndAreDeterministic) {
  const std::vector<int> ids{k1g5, k1g10, k2g10, k3g20, k4g20, k7g40};
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    // A random state: create random instances where they fit.
    StateId state = space_->empty_state();
    for (int k = 0; k < 6; ++k) {
      const int id = ids[rng() % ids.size()];
      if (auto c = choose_placement(*space_, state, id)) state = c->next;
    }
    std::set<Placement> busy;
    for (const Placement& p : space_->layout(state).instances) {
      if (rng() % 2 == 0) busy.insert(p);
    }
    for (Scheme scheme : {Scheme::kA, Scheme::kB, Scheme::kSequential, Scheme::kTimeFit}) {
      std::vector<QueuedJob> queue;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) {
        QueuedJob q = job(static_cast<std::size_t>(i), static_cast<double>(rng() % 45),
                          static_cast<core::Nanos>(rng() % 5));
        q.restart = rng() % 5 == 0;
        // Time-fit's predictions: some profiles timed, some left to scaling.
        for (const int id : ids) {
          if (rng() % 3 != 0) q.times.push_back({id, core::seconds(1 + rng() % 100)});
        }
        queue.push_back(q);
      }
      SchedulerInput in = input(scheme, queue);
      in.current = state;
      in.busy = busy;
      for (const Placement& p : busy) in.free_at[p] = core::seconds(rng() % 50);
      in.now = core::seconds(rng() % 10);
      const Decisions d = schedule(in);
      EXPECT_EQ(serialize(d), serialize(schedule(in))) << "seed " << seed;

      std::set<Placement> taken = busy;
      for (const StartDecision& s : d.starts) {
        for (const Placement& p : s.plan.destroy) {
          EXPECT_FALSE(taken.contains(p)) << "seed " << seed << " destroys a busy instance";
        }
        EXPECT_FALSE(taken.contains(s.plan.instance)) << "seed " << seed;
        taken.insert(s.plan.instance);
        const Layout& after = space_->layout(s.plan.result);
        EXPECT_TRUE(check_layout(space_->geometry(), after).has_value());
        for (const Placement& p : taken) {
          EXPECT_NE(std::ranges::find(after.instances, p), after.instances.end())
              << "seed " << seed << ": an instance in use is missing after the plan";
        }
        const hw::MigProfile* p = space_->geometry().find(s.plan.instance.profile_id);
        const QueuedJob& q = *std::ranges::find(queue, s.job, &QueuedJob::job);
        EXPECT_GE(p->memory_bytes, q.need_bytes);
      }
      for (const GiveUp& g : d.give_ups) EXPECT_FALSE(g.reason.empty());
    }
  }
}

}  // namespace
}  // namespace tessera::mig
