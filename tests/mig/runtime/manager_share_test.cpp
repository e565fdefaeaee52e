// Time-fit on a simulated MIG GPU whose instances run two jobs (sim::SimMigOptions::
// jobs_per_instance): small jobs share instances, every job completes, no instance ever runs more
// than two, and the mix finishes sooner than with one job to an instance.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backends/sim/mig/sim_mig_test_support.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/mig/sim_mig.hpp"
#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/mig/runtime/manager.hpp"
#include "tessera/mig/runtime/run_report.hpp"

namespace tessera::mig {
namespace {

using sim::test::kGiB;

// A job of small GEMMs (sixteen tiles each): it leaves most of any slice above 1g idle, so two
// of them share one with little loss.
workload::BatchJobPtr small_job(int i, std::int64_t iterations) {
  auto j = std::make_shared<workload::BatchJob>(
      *sim::test::small_gemm_job("small-gemm", iterations, /*repeat=*/8));
  j->name = "small" + std::to_string(i);
  j->memory.base_bytes = 2 * kGiB;
  j->estimated_peak_bytes = 2 * kGiB;
  return j;
}

std::vector<workload::BatchJobPtr> small_jobs() {
  std::vector<workload::BatchJobPtr> jobs;
  for (int i = 0; i < 10; ++i) jobs.push_back(small_job(i, 4000 + 500 * i));
  return jobs;
}

struct Outcome {
  MigRunResult result;
  bool left_instances = false;
  int co_runs_asked = 0;  // pairs and profiles the manager asked the model for
};

Outcome run_mix(int jobs_per_instance, bool co_run) {
  auto spec = hw::find_gpu("a100-40gb");
  auto geometry = hw::find_mig_geometry("a100-40gb");
  EXPECT_TRUE(spec && geometry);
  auto model = std::make_shared<sim::SliceCostModel>(*spec, *geometry);
  ManagerOptions o;
  o.scheme = Scheme::kTimeFit;
  o.job_time = [model](const workload::BatchJob& j, const hw::MigProfile& p) {
    return model->job_time(j, p);
  };
  auto asked = std::make_shared<int>(0);
  if (co_run) {
    o.co_run = [model, asked](const workload::BatchJob& a, const workload::BatchJob& b,
                              const hw::MigProfile& p) -> core::Result<std::pair<double, double>> {
      ++*asked;
      auto c = model->co_run(a, b, p);
      if (!c) return std::unexpected(c.error());
      return std::pair{c->slowdown_a, c->slowdown_b};
    };
  }
  sim::SimMigOptions d;
  d.jobs_per_instance = jobs_per_instance;
  sim::Engine engine;
  auto device = sim::SimMig::create(engine, *spec, d);
  EXPECT_TRUE(device.has_value());
  auto r = run_jobs(**device, small_jobs(), o);
  EXPECT_TRUE(r.has_value()) << r.error().message();
  return Outcome{.result = std::move(*r),
                 .left_instances = !(*device)->instances().empty(),
                 .co_runs_asked = *asked};
}

TEST(ManagerShareTest, SmallJobsShareInstancesAndFinishSooner) {
  const Outcome apart = run_mix(1, false);
  const Outcome shared = run_mix(2, true);
  for (const Outcome* r : {&apart, &shared}) {
    EXPECT_EQ(r->result.completed(), 10);
    EXPECT_FALSE(r->left_instances);
  }
  EXPECT_EQ(apart.result.shared_starts, 0);
  EXPECT_GT(shared.result.shared_starts, 0);
  EXPECT_LT(shared.result.makespan, apart.result.makespan);
  // Every job runs the same work: one pair of classes, asked once per profile (six on an
  // A100-40GB without media extensions), not once per pair of jobs.
  EXPECT_GT(shared.co_runs_asked, 0);
  EXPECT_LE(shared.co_runs_asked, 6);
  EXPECT_EQ(run_report_json(shared.result, *hw::find_mig_geometry("a100-40gb"))["shared_starts"],
            shared.result.shared_starts);

  // Each start beside a job names it, and that job was running there then.
  std::int64_t beside = 0;
  for (const JobOutcome& j : shared.result.jobs) {
    for (const Attempt& a : j.attempts) {
      if (a.beside.empty()) continue;
      ++beside;
      const auto partner = std::ranges::find(shared.result.jobs, a.beside, &JobOutcome::name);
      ASSERT_NE(partner, shared.result.jobs.end()) << a.beside;
      EXPECT_TRUE(std::ranges::any_of(partner->attempts,
                                      [&](const Attempt& p) {
                                        return p.profile_id == a.profile_id && p.start == a.start &&
                                               p.started <= a.started && a.started < p.ended;
                                      }))
          << j.name << " beside " << a.beside;
    }
  }
  EXPECT_EQ(beside, shared.result.shared_starts);

  // No instance ever runs more than two jobs: at each attempt's start, at most one other attempt
  // on its instance is under way.
  std::vector<const Attempt*> attempts;
  for (const JobOutcome& j : shared.result.jobs) {
    for (const Attempt& a : j.attempts) attempts.push_back(&a);
  }
  for (const Attempt* a : attempts) {
    const auto beside = std::ranges::count_if(attempts, [&](const Attempt* b) {
      return b != a && b->profile_id == a->profile_id && b->start == a->start &&
             b->started <= a->started && a->started < b->ended;
    });
    EXPECT_LE(beside, 1);
  }
}

TEST(ManagerShareTest, NothingSharesWhereTheDeviceRunsOneJobToAnInstance) {
  const Outcome r = run_mix(1, true);
  EXPECT_EQ(r.result.completed(), 10);
  EXPECT_EQ(r.result.shared_starts, 0);
}

}  // namespace
}  // namespace tessera::mig
