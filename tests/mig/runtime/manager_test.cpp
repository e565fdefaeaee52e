#include "tessera/mig/runtime/manager.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/fakes/fake_mig_device.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/scheduler.hpp"
#include "tessera/mig/registry.hpp"
#include "tessera/mig/runtime/run_report.hpp"

namespace tessera::mig {
namespace {

using device::JobExitKind;
using test::FakeMigDevice;

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr core::Nanos kIteration = core::kNanosPerMilli;  // the fake's default
// A100-40GB profile IDs ([MIG-T6] in src/tessera/hw/mig_profiles.cpp).
constexpr int k1g5 = 19;
constexpr int k3g20 = 9;
constexpr int k7g40 = 0;

hw::MigGeometry a100() {
  return *hw::find_mig_geometry("a100-40gb");
}

ManagerOptions options(Scheme scheme, bool early_restart = true) {
  ManagerOptions o;
  o.scheme = scheme;
  o.early_restart = early_restart;
  return o;
}

struct JobSpec {
  std::string name{};
  std::int64_t iterations = 10;
  double base_gib = 1;
  double growth_gib_per_iteration = 0;
  double estimate_gib = -1;  // < 0: the base
  core::Nanos submit = 0;
};

workload::BatchJobPtr make_job(const JobSpec& s) {
  auto job = std::make_shared<workload::BatchJob>();
  job->name = s.name;
  job->iterations = s.iterations;
  job->submit_time = s.submit;
  job->memory.base_bytes = static_cast<std::int64_t>(s.base_gib * kGiB);
  job->memory.per_iteration = s.growth_gib_per_iteration * kGiB;
  job->estimated_peak_bytes =
      static_cast<std::int64_t>((s.estimate_gib < 0 ? s.base_gib : s.estimate_gib) * kGiB);
  return job;
}

std::int64_t memory_of(int profile_id) {
  return a100().find(profile_id)->memory_bytes;
}

// What every run must satisfy, whatever the scheme and the failures.
void expect_invariants(const FakeMigDevice& fake, const std::vector<workload::BatchJobPtr>& jobs,
                       const MigRunResult& r, const std::string& where) {
  ASSERT_EQ(r.jobs.size(), jobs.size()) << where;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobOutcome& o = r.jobs[i];
    EXPECT_EQ(o.name, jobs[i]->name) << where;
    EXPECT_TRUE(o.completed || !o.reason.empty()) << where << ": " << o.name << " lost";
    if (o.completed) {
      ASSERT_FALSE(o.attempts.empty()) << where;
      EXPECT_EQ(o.attempts.back().exit, JobExitKind::kCompleted) << where;
      EXPECT_EQ(o.attempts.back().iterations_done, jobs[i]->iterations) << where;
    }
    // A restart for memory goes to a strictly larger instance.
    for (std::size_t k = 1; k < o.attempts.size(); ++k) {
      const Attempt& before = o.attempts[k - 1];
      if (before.exit == JobExitKind::kOutOfMemory || before.early_restart) {
        EXPECT_GT(memory_of(o.attempts[k].profile_id), memory_of(before.profile_id))
            << where << ": " << o.name;
      }
    }
  }
  EXPECT_TRUE(fake.violations().empty())
      << where << ": " << (fake.violations().empty() ? "" : fake.violations().front());
  EXPECT_TRUE(fake.instances().empty()) << where << ": instances left behind";
}

TEST(ManagerTest, RunsSmallJobsSideBySideAndLeavesTheGpuAsFound) {
  FakeMigDevice fake(a100());
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "a", .base_gib = 2}),
                                          make_job({.name = "b", .base_gib = 8}),
                                          make_job({.name = "c", .base_gib = 18})};
  std::vector<Progress> progress;
  auto r =
      run_jobs(fake, jobs, options(Scheme::kB), [&](const Progress& p) { progress.push_back(p); });
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "B");
  EXPECT_EQ(r->completed(), 3);
  // All three at once: the makespan is one job's time.
  EXPECT_EQ(r->makespan, 10 * kIteration);
  EXPECT_EQ(r->jobs[0].attempts[0].profile_id, k1g5);
  EXPECT_EQ(r->jobs[2].attempts[0].profile_id, k3g20);
  EXPECT_EQ(r->reconfigurations.size(), 3u);
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress.back().finished, 3);
  EXPECT_EQ(progress.back().total, 3);
}

TEST(ManagerTest, SequentialRunsOneJobAfterAnother) {
  FakeMigDevice fake(a100());
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "a"}), make_job({.name = "b"}),
                                          make_job({.name = "c"})};
  auto r = run_jobs(fake, jobs, options(Scheme::kSequential));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "sequential");
  EXPECT_EQ(r->makespan, 30 * kIteration);
  for (const JobOutcome& o : r->jobs) EXPECT_EQ(o.attempts.front().profile_id, k7g40);
  // The 7g.40gb is created once and reused.
  EXPECT_EQ(fake.create_calls(), 1);
}

TEST(ManagerTest, EarlyRestartFiresBeforeTheOutOfMemoryIteration) {
  FakeMigDevice fake(a100());
  // 2 GiB growing by 0.1 GiB per iteration to 11.9 GiB: estimated at 2 GiB, so it starts on a
  // 1g.5gb and would run out of memory there at iteration 31.
  const JobSpec spec{
      .name = "grow", .iterations = 100, .base_gib = 2, .growth_gib_per_iteration = 0.1};
  std::vector<workload::BatchJobPtr> jobs{make_job(spec)};
  const std::int64_t oom_at = jobs[0]->memory.first_iteration_above(5 * kGiB, 100);
  ASSERT_GT(oom_at, 0);
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "early");
  const JobOutcome& o = r->jobs[0];
  ASSERT_TRUE(o.completed) << o.reason;
  ASSERT_GE(o.attempts.size(), 2u);
  EXPECT_TRUE(o.attempts[0].early_restart);
  EXPECT_EQ(o.attempts[0].exit, JobExitKind::kKilled);
  EXPECT_LT(o.attempts[0].iterations_done, oom_at);
  EXPECT_GT(o.attempts[0].predicted_peak_bytes, 5 * kGiB);
  EXPECT_EQ(r->early_restarts, 1);
  EXPECT_EQ(r->oom_restarts, 0);
  EXPECT_GE(memory_of(o.attempts.back().profile_id), jobs[0]->memory.peak_reserved(100));
}

TEST(ManagerTest, OutOfMemoryRestartsOnTheNextLargerProfileWithoutEarlyRestart) {
  FakeMigDevice fake(a100());
  const JobSpec spec{
      .name = "grow", .iterations = 100, .base_gib = 2, .growth_gib_per_iteration = 0.1};
  std::vector<workload::BatchJobPtr> jobs{make_job(spec)};
  auto r = run_jobs(fake, jobs, options(Scheme::kB, false));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "oom");
  const JobOutcome& o = r->jobs[0];
  ASSERT_TRUE(o.completed) << o.reason;
  EXPECT_EQ(o.attempts[0].exit, JobExitKind::kOutOfMemory);
  EXPECT_EQ(o.attempts[0].profile_id, k1g5);
  EXPECT_GE(r->oom_restarts, 1);
  EXPECT_EQ(r->early_restarts, 0);
}

TEST(ManagerTest, AJobThatOutgrowsTheLargestInstanceIsGivenUpWithTheReason) {
  FakeMigDevice fake(a100());
  std::vector<workload::BatchJobPtr> jobs{
      make_job({.name = "huge", .iterations = 50, .base_gib = 2, .growth_gib_per_iteration = 1}),
      make_job({.name = "known", .base_gib = 60}), make_job({.name = "fine", .base_gib = 1})};
  for (bool early : {true, false}) {
    FakeMigDevice dev(a100());
    auto r = run_jobs(dev, jobs, options(Scheme::kB, early));
    ASSERT_TRUE(r) << r.error().message();
    expect_invariants(dev, jobs, *r, early ? "early" : "no early");
    EXPECT_FALSE(r->jobs[0].completed);
    EXPECT_NE(r->jobs[0].reason.find("ran out of memory on 7g.40gb"), std::string::npos)
        << r->jobs[0].reason;
    EXPECT_EQ(r->jobs[0].attempts.back().profile_id, k7g40);
    EXPECT_FALSE(r->jobs[1].completed);
    EXPECT_EQ(r->jobs[1].reason, "needs 60 GiB; the largest instance, 7g.40gb, has 40 GiB");
    EXPECT_TRUE(r->jobs[2].completed);
  }
}

TEST(ManagerTest, AFailedJobIsRetriedOnceOnTheSameProfile) {
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "flaky", .base_gib = 8})};
  FakeMigDevice once(a100());
  once.fail_job_runs("flaky", 1);
  auto r = run_jobs(once, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(once, jobs, *r, "once");
  ASSERT_TRUE(r->jobs[0].completed);
  ASSERT_EQ(r->jobs[0].attempts.size(), 2u);
  EXPECT_EQ(r->jobs[0].attempts[0].exit, JobExitKind::kFailed);
  EXPECT_EQ(r->jobs[0].attempts[1].profile_id, r->jobs[0].attempts[0].profile_id);

  FakeMigDevice twice(a100());
  twice.fail_job_runs("flaky", 2);
  r = run_jobs(twice, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(twice, jobs, *r, "twice");
  EXPECT_FALSE(r->jobs[0].completed);
  EXPECT_NE(r->jobs[0].reason.find("injected job failure"), std::string::npos);
}

TEST(ManagerTest, AStartFailingAfterACreateLeavesNoOrphan) {
  FakeMigDevice fake(a100());
  fake.fail_start_call(1);
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "a", .base_gib = 2})};
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "start fails");
  EXPECT_TRUE(r->jobs[0].completed);
  // The instance created for the refused start was reused, not created again.
  EXPECT_EQ(fake.create_calls(), 1);
  EXPECT_EQ(fake.start_calls(), 2);
}

TEST(ManagerTest, ADeviceThatRefusesEveryCreateGivesJobsUpWithItsMessage) {
  FakeMigDevice fake(a100());
  for (int n = 1; n <= 100; ++n) fake.fail_create_call(n);
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "a"}), make_job({.name = "b"})};
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "refusing device");
  for (const JobOutcome& o : r->jobs) {
    EXPECT_FALSE(o.completed);
    EXPECT_NE(o.reason.find("injected failure of create call"), std::string::npos) << o.reason;
  }
}

// One device failure at each create, destroy and start call in turn of a run that reconfigures:
// every job still completes and nothing is left behind.
TEST(ManagerTest, AFailureAtEveryDeviceCallStillLosesNoJob) {
  std::vector<workload::BatchJobPtr> jobs;
  const double sizes[] = {18, 4, 4, 9, 30, 2, 2, 2, 15, 4};
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(make_job({.name = fmt::format("j{}", i),
                             .iterations = 5 + i,
                             .base_gib = sizes[i],
                             .submit = i * 3 * kIteration}));
  }
  // One grows out of its slice, so restarts are exercised too.
  jobs.push_back(
      make_job({.name = "grow", .iterations = 60, .base_gib = 2, .growth_gib_per_iteration = 0.2}));
  for (Scheme scheme : {Scheme::kA, Scheme::kB, Scheme::kSequential}) {
    FakeMigDevice clean(a100());
    auto base = run_jobs(clean, jobs, options(scheme));
    ASSERT_TRUE(base) << base.error().message();
    expect_invariants(clean, jobs, *base, std::string(to_string(scheme)));
    ASSERT_EQ(base->completed(), static_cast<std::int64_t>(jobs.size()));
    const int calls[] = {clean.create_calls(), clean.destroy_calls(), clean.start_calls()};
    for (int kind = 0; kind < 3; ++kind) {
      for (int n = 1; n <= calls[kind] + 1; ++n) {
        FakeMigDevice fake(a100());
        if (kind == 0) fake.fail_create_call(n);
        if (kind == 1) fake.fail_destroy_call(n);
        if (kind == 2) fake.fail_start_call(n);
        const std::string where = fmt::format("scheme {} {} call {}", to_string(scheme),
                                              kind == 0   ? "create"
                                              : kind == 1 ? "destroy"
                                                          : "start",
                                              n);
        auto r = run_jobs(fake, jobs, options(scheme));
        ASSERT_TRUE(r) << where << ": " << r.error().message();
        expect_invariants(fake, jobs, *r, where);
        EXPECT_EQ(r->completed(), static_cast<std::int64_t>(jobs.size())) << where;
      }
    }
  }
}

// Random queues over several seeds and every scheme: no job lost, no overlapping instances (the
// fake checks every create), no busy instance destroyed, restarts only to larger instances.
TEST(ManagerTest, RandomQueuesKeepTheInvariants) {
  for (std::uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    std::vector<workload::BatchJobPtr> jobs;
    const int n = 5 + static_cast<int>(rng() % 15);
    for (int i = 0; i < n; ++i) {
      const double base = 0.5 + static_cast<double>(rng() % 44);
      const bool grows = rng() % 3 == 0;
      jobs.push_back(make_job({.name = fmt::format("j{}", i),
                               .iterations = 5 + static_cast<std::int64_t>(rng() % 40),
                               .base_gib = grows ? base / 4 : base,
                               .growth_gib_per_iteration = grows ? 0.05 * (rng() % 10) : 0,
                               .estimate_gib = rng() % 4 == 0 ? 0.0 : -1.0,
                               .submit = static_cast<core::Nanos>(rng() % 50) * kIteration}));
    }
    for (const auto& entry : schemes()) {
      const Scheme scheme = entry.value;
      FakeMigDevice fake(a100());
      ManagerOptions opts = options(scheme);
      opts.static_layout = Layout{{{k1g5, 0}, {k1g5, 1}, {14, 2}, {k3g20, 4}}};
      auto r = run_jobs(fake, jobs, opts);
      const std::string where = fmt::format("seed {} scheme {}", seed, to_string(scheme));
      ASSERT_TRUE(r) << where << ": " << r.error().message();
      expect_invariants(fake, jobs, *r, where);
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        // What fits the GPU completes (sequential and static aside, whose instances are fixed).
        if (scheme == Scheme::kA || scheme == Scheme::kB) {
          EXPECT_EQ(r->jobs[i].completed,
                    jobs[i]->memory.peak_reserved(jobs[i]->iterations) <= memory_of(k7g40) &&
                        jobs[i]->estimated_peak_bytes <= memory_of(k7g40))
              << where << " " << jobs[i]->name << ": " << r->jobs[i].reason;
        }
      }
    }
  }
}

TEST(ManagerTest, StaticCreatesTheLayoutOnceAndNamesItWhenAJobCannotFit) {
  FakeMigDevice fake(a100());
  ManagerOptions opts = options(Scheme::kStatic);
  opts.static_layout = Layout{{{k1g5, 0}, {k1g5, 1}, {k3g20, 4}}};
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "small", .base_gib = 4}),
                                          make_job({.name = "big", .base_gib = 30}),
                                          make_job({.name = "mid", .base_gib = 12})};
  auto r = run_jobs(fake, jobs, opts);
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "static");
  EXPECT_TRUE(r->jobs[0].completed);
  EXPECT_FALSE(r->jobs[1].completed);
  EXPECT_NE(r->jobs[1].reason.find("1g.5gb@0 + 1g.5gb@1 + 3g.20gb@4"), std::string::npos)
      << r->jobs[1].reason;
  EXPECT_TRUE(r->jobs[2].completed);
  EXPECT_EQ(fake.create_calls(), 3);
}

TEST(ManagerTest, InstancesThatExistAreAdoptedAndKept) {
  FakeMigDevice fake(a100());
  const device::MigInstance existing = fake.add_existing(k3g20, 4);
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "a", .base_gib = 18})};
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->jobs[0].completed);
  EXPECT_EQ(fake.create_calls(), 0);  // reused
  ASSERT_EQ(fake.instances().size(), 1u);
  EXPECT_EQ(fake.instances()[0].id, existing.id);  // not ours: left as found
}

TEST(ManagerTest, AReconfigurationRefusedHalfWayIsRecordedWithTheDevicesError) {
  FakeMigDevice fake(a100());
  fake.add_existing(k1g5, 0);
  fake.add_existing(k1g5, 1);
  fake.fail_create_call(1);
  // 30 GiB needs the 7g instance: both idle 1g instances are destroyed, then the create is refused.
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "big", .base_gib = 30})};
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  expect_invariants(fake, jobs, *r, "refused half way");
  ASSERT_EQ(r->reconfigurations.size(), 2u);
  const ReconfigEvent& refused = r->reconfigurations[0];
  EXPECT_EQ(refused.destroyed.size(), 2u);
  EXPECT_EQ(refused.created, (Placement{k7g40, 0}));
  EXPECT_NE(refused.error.find("injected failure of create call"), std::string::npos)
      << refused.error;
  EXPECT_TRUE(r->reconfigurations[1].error.empty());  // the retry, in the free slices
  EXPECT_TRUE(r->reconfigurations[1].destroyed.empty());
  EXPECT_TRUE(r->jobs[0].completed);
  const auto json = run_report_json(*r, a100());
  EXPECT_TRUE(json["reconfigurations"][0].contains("error"));
  EXPECT_FALSE(json["reconfigurations"][1].contains("error"));
}

TEST(ManagerTest, AnInstanceOutsideTheSpaceIsAnErrorNamingIt) {
  FakeMigDevice fake(a100());
  fake.add_existing(20, 0);  // 1g.5gb+me: the scheduler does not hand out media extensions
  std::vector<workload::BatchJobPtr> jobs{make_job({.name = "a"})};
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("1g.5gb+me@0"), std::string::npos) << r.error().message();
  EXPECT_EQ(fake.instances().size(), 1u);
}

TEST(ManagerTest, TheReportHasEveryJobAndAttempt) {
  FakeMigDevice fake(a100());
  std::vector<workload::BatchJobPtr> jobs{
      make_job({.name = "grow", .iterations = 100, .base_gib = 2, .growth_gib_per_iteration = 0.1}),
      make_job({.name = "huge", .base_gib = 60})};
  auto r = run_jobs(fake, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  const nlohmann::json j = run_report_json(*r, fake.geometry());
  EXPECT_EQ(j["gpu"], "A100-SXM4-40GB");
  EXPECT_EQ(j["scheme"], "B");
  ASSERT_EQ(j["jobs"].size(), 2u);
  EXPECT_EQ(j["jobs"][0]["attempts"][0]["profile"], "1g.5gb");
  EXPECT_EQ(j["jobs"][0]["attempts"][0]["early_restart"], true);
  EXPECT_EQ(j["jobs"][1]["completed"], false);
  EXPECT_EQ(j["early_restarts"], 1);
  EXPECT_GE(j["reconfigurations"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["makespan_s"].get<double>(), core::to_seconds(r->makespan));
  EXPECT_DOUBLE_EQ(j["longest_wait_s"].get<double>(), core::to_seconds(r->longest_wait()));
  const std::string table = run_report_table(*r, fake.geometry());
  EXPECT_NE(table.find("1g.5gb early > "), std::string::npos) << table;
  EXPECT_NE(table.find("huge: needs 60 GiB"), std::string::npos) << table;
}

}  // namespace
}  // namespace tessera::mig
