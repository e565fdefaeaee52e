// The manager on the simulated MIG GPU (sim::SimMig with its default reconfiguration and start
// times and sample noise): every scheme runs a mix to the end and leaves no instance behind, the
// early restart fires under noisy samples, and a run is reproducible.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/mig/sim_mig.hpp"
#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/registry.hpp"
#include "tessera/mig/runtime/manager.hpp"
#include "tessera/mig/runtime/run_report.hpp"

namespace tessera::mig {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

std::unique_ptr<sim::SimMig> make_device(sim::Engine& engine, sim::SimMigOptions o = {}) {
  auto spec = hw::find_gpu("a100-40gb");
  EXPECT_TRUE(spec.has_value());
  auto mig = sim::SimMig::create(engine, spec.value(), o);
  EXPECT_TRUE(mig.has_value()) << (mig ? "" : mig.error().message());
  return std::move(mig.value());
}

// A custom job: `seconds` per iteration on the whole GPU, half of it serial (so it gains from
// running beside others on a slice rather than alone on the whole GPU).
workload::BatchJobPtr job(std::string name, double gib, std::int64_t iterations = 20,
                          double growth_gib = 0, core::Nanos submit = 0) {
  auto j = std::make_shared<workload::BatchJob>();
  j->name = std::move(name);
  j->iterations = iterations;
  j->submit_time = submit;
  j->memory.base_bytes = static_cast<std::int64_t>(gib * kGiB);
  j->memory.per_iteration = growth_gib * kGiB;
  j->estimated_peak_bytes = j->memory.base_bytes;
  j->iteration_time_full = core::seconds(1);
  j->serial_fraction = 0.5;
  return j;
}

std::vector<workload::BatchJobPtr> mix() {
  std::vector<workload::BatchJobPtr> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(job("small" + std::to_string(i), 3));
  jobs.push_back(job("mid", 9));
  jobs.push_back(job("large", 18));
  jobs.push_back(job("late", 4, 20, 0, core::seconds(30)));
  return jobs;
}

ManagerOptions options(Scheme scheme) {
  ManagerOptions o;
  o.scheme = scheme;
  o.static_layout = Layout{{{19, 0}, {19, 1}, {14, 2}, {9, 4}}};  // 1g.5gb x2, 2g.10gb, 3g.20gb
  return o;
}

TEST(ManagerSimTest, EverySchemeRunsTheMixToTheEndAndLeavesNoInstance) {
  const auto jobs = mix();
  std::map<Scheme, core::Nanos> makespan;
  for (const auto& entry : schemes()) {
    const Scheme scheme = entry.value;
    sim::Engine engine;
    auto device = make_device(engine);
    auto r = run_jobs(*device, jobs, options(scheme));
    ASSERT_TRUE(r) << to_string(scheme) << ": " << r.error().message();
    EXPECT_EQ(r->completed(), static_cast<std::int64_t>(jobs.size()))
        << run_report_table(*r, device->geometry());
    EXPECT_TRUE(device->instances().empty()) << to_string(scheme);
    EXPECT_GT(r->energy_joules, 0);
    for (const JobOutcome& o : r->jobs) EXPECT_GE(o.attempts.front().started, o.submitted);
    makespan[scheme] = r->makespan;
  }
  // Half-serial jobs gain from running side by side on slices.
  EXPECT_LT(makespan[Scheme::kA], makespan[Scheme::kSequential]);
  EXPECT_LT(makespan[Scheme::kB], makespan[Scheme::kSequential]);
}

// With each job's time on each profile from the simulated GPU's kernel model, time-fit finishes
// the mix sooner than scheme B and than the static layout, and the longest wait is the longest
// from a submission to a first start.
TEST(ManagerSimTest, TimeFitWithPredictedTimesFinishesBeforeSchemeBAndTheStaticLayout) {
  const auto jobs = mix();
  auto spec = hw::find_gpu("a100-40gb");
  auto geometry = hw::find_mig_geometry("a100-40gb");
  ASSERT_TRUE(spec && geometry);
  auto model = std::make_shared<sim::SliceCostModel>(*spec, *geometry);
  std::map<Scheme, MigRunResult> runs;
  for (const Scheme scheme : {Scheme::kB, Scheme::kStatic, Scheme::kTimeFit}) {
    ManagerOptions o = options(scheme);
    o.job_time = [model](const workload::BatchJob& j, const hw::MigProfile& p) {
      return model->job_time(j, p);
    };
    sim::Engine engine;
    auto device = make_device(engine);
    auto r = run_jobs(*device, jobs, o);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->completed(), static_cast<std::int64_t>(jobs.size()));
    runs.emplace(scheme, std::move(*r));
  }
  const MigRunResult& fit = runs.at(Scheme::kTimeFit);
  EXPECT_LT(fit.makespan, runs.at(Scheme::kB).makespan);
  EXPECT_LT(fit.makespan, runs.at(Scheme::kStatic).makespan);
  core::Nanos longest = 0;
  for (const JobOutcome& j : fit.jobs) {
    longest = std::max(longest, j.attempts.front().started - j.submitted);
  }
  EXPECT_EQ(fit.longest_wait(), longest);
  EXPECT_GT(longest, 0);
}

// Every MIG GPU of the catalog (A100 40/80 GB, H100, H200), each with its own profiles and
// placements: time-fit runs the mix to the end on predicted times and leaves no instance.
TEST(ManagerSimTest, TimeFitRunsTheMixOnEveryMigGpu) {
  const auto jobs = mix();
  for (const hw::MigGeometry& geometry : hw::mig_catalog()) {
    auto spec = hw::find_gpu(geometry.gpu);
    ASSERT_TRUE(spec) << geometry.gpu;
    auto model = std::make_shared<sim::SliceCostModel>(*spec, geometry);
    ManagerOptions o;
    o.scheme = Scheme::kTimeFit;
    o.job_time = [model](const workload::BatchJob& j, const hw::MigProfile& p) {
      return model->job_time(j, p);
    };
    sim::Engine engine;
    auto device = sim::SimMig::create(engine, *spec, {});
    ASSERT_TRUE(device) << geometry.gpu << ": " << device.error().message();
    auto r = run_jobs(**device, jobs, o);
    ASSERT_TRUE(r) << geometry.gpu << ": " << r.error().message();
    EXPECT_EQ(r->completed(), static_cast<std::int64_t>(jobs.size())) << geometry.gpu;
    EXPECT_TRUE((*device)->instances().empty()) << geometry.gpu;
    for (const JobOutcome& j : r->jobs) {
      for (const Attempt& a : j.attempts) {
        EXPECT_NE(geometry.find(a.profile_id), nullptr) << geometry.gpu << " " << j.name;
      }
    }
  }
}

TEST(ManagerSimTest, EarlyRestartFiresBeforeTheOutOfMemoryIterationUnderNoisySamples) {
  sim::Engine engine;
  auto device = make_device(engine);
  // 2 GiB growing by 0.1 GiB per iteration: over the 1g.5gb's 5 GiB at iteration 31.
  const std::vector<workload::BatchJobPtr> jobs{job("grow", 2, 100, 0.1)};
  const std::int64_t oom_at = jobs[0]->memory.first_iteration_above(5 * kGiB, 100);
  auto r = run_jobs(*device, jobs, options(Scheme::kB));
  ASSERT_TRUE(r) << r.error().message();
  const JobOutcome& o = r->jobs[0];
  ASSERT_TRUE(o.completed) << o.reason;
  ASSERT_GE(o.attempts.size(), 2u);
  EXPECT_TRUE(o.attempts[0].early_restart);
  EXPECT_LT(o.attempts[0].iterations_done, oom_at);
  EXPECT_EQ(r->oom_restarts, 0);
  EXPECT_TRUE(device->instances().empty());
}

TEST(ManagerSimTest, ARunIsReproducible) {
  auto report = [] {
    sim::Engine engine;
    auto device = make_device(engine);
    auto jobs = mix();
    jobs.push_back(job("grow", 2, 60, 0.2));
    auto r = run_jobs(*device, jobs, options(Scheme::kA));
    EXPECT_TRUE(r.has_value());
    return r ? run_report_json(*r, device->geometry()).dump() : std::string();
  };
  EXPECT_EQ(report(), report());
}

TEST(ManagerSimTest, SequentialRunsOnTheWholeGpuWithMigDisabled) {
  sim::Engine engine;
  sim::SimMigOptions o;
  o.whole_gpu = true;
  auto device = make_device(engine, o);
  const auto jobs = mix();
  auto r = run_jobs(*device, jobs, options(Scheme::kSequential));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->completed(), static_cast<std::int64_t>(jobs.size()));
  for (const JobOutcome& job : r->jobs) EXPECT_EQ(job.attempts.front().profile_id, -1);
  EXPECT_TRUE(device->instances().empty());
}

// A stop (ManagerOptions::stop, a signal in `tessera mig run`) stops the running jobs, destroys
// the instances the run created and leaves every job not yet resolved unresolved, for a later
// run; the jobs resolved before it were reported as they were.
TEST(ManagerSimTest, AStopEndsTheRunWithUnfinishedJobsUnresolvedAndNoInstanceLeft) {
  sim::Engine engine;
  auto device = make_device(engine);
  std::vector<workload::BatchJobPtr> jobs = {job("short", 3, 2), job("long-a", 3, 500),
                                             job("long-b", 9, 500)};
  ManagerOptions o = options(Scheme::kB);
  std::vector<std::string> resolved;
  o.on_resolved = [&](const JobOutcome& outcome) { resolved.push_back(outcome.name); };
  int asked_after_short = 0;
  o.stop = [&]() -> std::optional<std::string> {
    if (resolved.empty()) return std::nullopt;
    ++asked_after_short;
    return std::string("SIGTERM");
  };
  auto r = run_jobs(*device, jobs, o);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->stopped, "SIGTERM");
  EXPECT_EQ(resolved, std::vector<std::string>{"short"});
  EXPECT_GE(asked_after_short, 1);
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_TRUE(r->jobs[0].resolved);
  EXPECT_TRUE(r->jobs[0].completed);
  for (int i : {1, 2}) {
    const JobOutcome& unfinished = r->jobs[static_cast<std::size_t>(i)];
    EXPECT_FALSE(unfinished.resolved) << unfinished.name;
    EXPECT_FALSE(unfinished.completed) << unfinished.name;
    EXPECT_NE(unfinished.reason.find("stopped (SIGTERM)"), std::string::npos) << unfinished.reason;
    ASSERT_FALSE(unfinished.attempts.empty()) << unfinished.name;
    EXPECT_EQ(unfinished.attempts.back().exit, device::JobExitKind::kKilled);
    EXPECT_LT(unfinished.attempts.back().iterations_done, 500);
  }
  EXPECT_TRUE(device->instances().empty());
  const std::string table = run_report_table(*r, device->geometry());
  EXPECT_NE(table.find("stopped (SIGTERM) before they finished: long-a, long-b"), std::string::npos)
      << table;
  EXPECT_EQ(run_report_json(*r, device->geometry()).at("stopped"), "SIGTERM");
}

// A stop asked at the first event ends the run with every job unresolved.
TEST(ManagerSimTest, AStopAtTheFirstEventResolvesNoJob) {
  sim::Engine engine;
  auto device = make_device(engine);
  ManagerOptions o = options(Scheme::kA);
  o.stop = [] { return std::optional<std::string>("SIGINT"); };
  auto r = run_jobs(*device, mix(), o);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->stopped, "SIGINT");
  EXPECT_EQ(r->completed(), 0);
  for (const JobOutcome& j : r->jobs) EXPECT_FALSE(j.resolved) << j.name;
  EXPECT_TRUE(device->instances().empty());
}

}  // namespace
}  // namespace tessera::mig
