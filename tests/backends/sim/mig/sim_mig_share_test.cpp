// Two jobs on one simulated MIG instance (SimMigOptions::jobs_per_instance 2).

#include <gtest/gtest.h>

#include "backends/sim/mig/sim_mig_test_support.hpp"
#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/mig/policy/co_run.hpp"

namespace tessera::sim {
namespace {

using device::JobExitKind;
using test::custom_job;
using test::gemm_job;
using test::k1g;
using test::k7g;
using test::kGiB;
using test::make;
using test::no_delays;
using test::Recorder;
using test::small_gemm_job;
using workload::BatchJob;

SimMigOptions sharing() {
  SimMigOptions o = no_delays();
  o.jobs_per_instance = 2;
  return o;
}

SliceCostModel a100_costs() {
  auto spec = hw::find_gpu("a100-40gb");
  auto geometry = hw::find_mig_geometry("a100-40gb");
  EXPECT_TRUE(spec.has_value() && geometry.has_value());
  return SliceCostModel(spec.value(), geometry.value());
}

const hw::MigProfile& profile(const SimMig& mig, int id) {
  const hw::MigProfile* p = mig.geometry().find(id);
  EXPECT_NE(p, nullptr);
  return *p;
}

TEST(SimMigShareTest, OneJobToAnInstanceUnlessSharingIsOn) {
  Engine engine;
  auto one = make(engine);
  EXPECT_EQ(one->capabilities().jobs_per_instance, 1);
  auto inst = one->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder a, b, c;
  ASSERT_TRUE(one->start_job(inst->id, small_gemm_job("a"), a).has_value());
  auto refused = one->start_job(inst->id, small_gemm_job("b"), b);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message().find("at most 1 at once"), std::string::npos);

  Engine engine2;
  auto two = make(engine2, sharing());
  EXPECT_EQ(two->capabilities().jobs_per_instance, 2);
  auto shared = two->create_instance(k7g, 0);
  ASSERT_TRUE(shared.has_value());
  ASSERT_TRUE(two->start_job(shared->id, small_gemm_job("a"), a).has_value());
  ASSERT_TRUE(two->start_job(shared->id, small_gemm_job("b"), b).has_value());
  EXPECT_FALSE(two->start_job(shared->id, small_gemm_job("c"), c).has_value());
  // Busy with either job, the instance cannot be destroyed.
  EXPECT_FALSE(two->destroy_instance(shared->id).has_value());
  ASSERT_TRUE(two->run([&] { return a.exits.size() + b.exits.size() == 2; }).has_value());
  EXPECT_EQ(a.exits.at(0).kind, JobExitKind::kCompleted);
  EXPECT_EQ(b.exits.at(0).kind, JobExitKind::kCompleted);
  EXPECT_TRUE(two->destroy_instance(shared->id).has_value());
}

TEST(SimMigShareTest, EachJobRunsAtItsSlowdownAndTheOneLeftSpeedsUp) {
  // A long and a short job of the same work, started together on 1g.5gb: while both run each
  // iteration takes its time alone times the pair's slowdown; once the short one ends the long
  // one runs alone. Its end is what the policy's arithmetic (mig::shared_ends) predicts.
  Engine engine;
  auto mig = make(engine, sharing());
  auto inst = mig->create_instance(k1g, 0);
  ASSERT_TRUE(inst.has_value());
  const auto long_job = gemm_job(12);
  const auto short_job = std::make_shared<BatchJob>(*gemm_job(4));
  short_job->name = "short";
  Recorder l, s;
  ASSERT_TRUE(mig->start_job(inst->id, long_job, l).has_value());
  ASSERT_TRUE(mig->start_job(inst->id, short_job, s).has_value());
  ASSERT_TRUE(mig->run([&] { return l.exits.size() + s.exits.size() == 2; }).has_value());

  SliceCostModel costs = a100_costs();
  const auto alone = costs.iteration(*long_job, 0, profile(*mig, k1g));
  const auto pair = costs.co_run(*long_job, 0, *short_job, 0, profile(*mig, k1g));
  ASSERT_TRUE(alone.has_value() && pair.has_value());
  EXPECT_GT(pair->slowdown_a, 1.5);
  const auto ends =
      mig::shared_ends({.begins = 0, .work = 12 * alone->time, .slowdown = pair->slowdown_a},
                       {.begins = 0, .work = 4 * alone->time, .slowdown = pair->slowdown_b});
  ASSERT_EQ(s.exits.size(), 1U);
  ASSERT_EQ(l.exits.size(), 1U);
  EXPECT_NEAR(static_cast<double>(s.exits[0].at), static_cast<double>(ends.second),
              1e-6 * static_cast<double>(ends.second));
  EXPECT_NEAR(static_cast<double>(l.exits[0].at), static_cast<double>(ends.first),
              1e-6 * static_cast<double>(ends.first));
  // Sharing a full slice gains nothing: the pair ends no sooner than back to back.
  EXPECT_GE(static_cast<double>(l.exits[0].at), 0.95 * 16 * static_cast<double>(alone->time));
}

TEST(SimMigShareTest, TwoSmallJobsFinishSoonerTogetherThanOneAfterTheOther) {
  Engine engine;
  auto mig = make(engine, sharing());
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  const auto a = small_gemm_job("a", 50);
  const auto b = small_gemm_job("b", 50);
  Recorder ra, rb;
  ASSERT_TRUE(mig->start_job(inst->id, a, ra).has_value());
  ASSERT_TRUE(mig->start_job(inst->id, b, rb).has_value());
  ASSERT_TRUE(mig->run([&] { return ra.exits.size() + rb.exits.size() == 2; }).has_value());
  SliceCostModel costs = a100_costs();
  const auto alone = costs.job_time(*a, profile(*mig, k7g));
  ASSERT_TRUE(alone.has_value());
  const core::Nanos last = std::max(ra.exits.at(0).at, rb.exits.at(0).at);
  EXPECT_GT(last, *alone);
  EXPECT_LT(static_cast<double>(last), 1.5 * static_cast<double>(*alone));
}

TEST(SimMigShareTest, TheJobWhoseMemoryOverflowsTheInstanceRunsOutOfMemory) {
  Engine engine;
  auto mig = make(engine, sharing());
  auto inst = mig->create_instance(k1g, 0);  // 1g.5gb
  ASSERT_TRUE(inst.has_value());
  auto first = std::make_shared<BatchJob>(*gemm_job(5));
  first->memory.base_bytes = 3 * kGiB;
  auto second = std::make_shared<BatchJob>(*gemm_job(5));
  second->name = "second";
  second->memory.base_bytes = 2 * kGiB + kGiB / 2;
  Recorder r1, r2;
  ASSERT_TRUE(mig->start_job(inst->id, first, r1).has_value());
  ASSERT_TRUE(mig->start_job(inst->id, second, r2).has_value());
  ASSERT_TRUE(mig->run([&] { return r1.exits.size() + r2.exits.size() == 2; }).has_value());
  ASSERT_EQ(r2.exits.size(), 1U);
  EXPECT_EQ(r2.exits[0].kind, JobExitKind::kOutOfMemory);
  EXPECT_EQ(r2.exits[0].iterations_done, 0);
  EXPECT_NE(r2.exits[0].message.find("beside"), std::string::npos) << r2.exits[0].message;
  EXPECT_NE(r2.exits[0].message.find("'gemm'"), std::string::npos) << r2.exits[0].message;
  EXPECT_EQ(r1.exits.at(0).kind, JobExitKind::kCompleted);
}

TEST(SimMigShareTest, AJobWithoutKernelsCannotShare) {
  Engine engine;
  auto mig = make(engine, sharing());
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder a, b;
  ASSERT_TRUE(mig->start_job(inst->id, gemm_job(), a).has_value());
  auto refused = mig->start_job(inst->id, custom_job(3, core::millis(5)), b);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("without kernels"), std::string::npos);
}

TEST(SimMigShareTest, EnergyCountsThePairOnce) {
  // Two full-slice jobs side by side draw about what one does, for about twice as long.
  Engine together_engine, alone_engine;
  auto together = make(together_engine, sharing());
  auto alone = make(alone_engine, sharing());
  for (SimMig* mig : {together.get(), alone.get()}) {
    auto inst = mig->create_instance(k7g, 0);
    ASSERT_TRUE(inst.has_value());
  }
  Recorder a, b, c;
  ASSERT_TRUE(together->start_job(together->instances()[0].id, gemm_job(6), a).has_value());
  ASSERT_TRUE(together->start_job(together->instances()[0].id, gemm_job(6), b).has_value());
  ASSERT_TRUE(together->run([&] { return a.exits.size() + b.exits.size() == 2; }).has_value());
  ASSERT_TRUE(alone->start_job(alone->instances()[0].id, gemm_job(12), c).has_value());
  ASSERT_TRUE(alone->run([&] { return !c.exits.empty(); }).has_value());
  const double ratio = together->stats().energy_joules / alone->stats().energy_joules;
  EXPECT_GT(ratio, 0.85);
  EXPECT_LT(ratio, 1.2);
}

TEST(SimMigShareTest, AJobStoppedBeforeItBeganLeavesTheOtherAsItWas) {
  // The first job begins its iterations at 1 s; the second, started at 0.5 s, would begin at
  // 1.5 s and is stopped at 1.2 s, during its process start: the first ran alone throughout and
  // ends exactly when it would have alone.
  SimMigOptions o = sharing();
  o.job_start_time = core::seconds(1);
  Engine engine;
  auto mig = make(engine, o);
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder a, b;
  ASSERT_TRUE(mig->start_job(inst->id, gemm_job(3), a).has_value());
  device::JobRunId run_b = 0;
  engine.schedule_at(core::millis(500), [&] {
    auto started = mig->start_job(inst->id, gemm_job(3), b);
    ASSERT_TRUE(started.has_value());
    run_b = *started;
  });
  engine.schedule_at(core::millis(1200), [&] { ASSERT_TRUE(mig->stop_job(run_b).has_value()); });
  ASSERT_TRUE(mig->run([&] { return a.exits.size() + b.exits.size() == 2; }).has_value());
  ASSERT_EQ(b.exits.size(), 1U);
  EXPECT_EQ(b.exits[0].kind, JobExitKind::kKilled);
  EXPECT_EQ(b.exits[0].iterations_done, 0);
  SliceCostModel costs = a100_costs();
  const auto alone = costs.iteration(*gemm_job(3), 0, profile(*mig, k7g));
  ASSERT_TRUE(alone.has_value());
  ASSERT_EQ(a.exits.size(), 1U);
  EXPECT_EQ(a.exits[0].at, core::seconds(1) + 3 * alone->time);
}

TEST(SimMigShareTest, RejectsBadSharingOptions) {
  Engine engine;
  auto spec = hw::find_gpu("a100-40gb");
  ASSERT_TRUE(spec.has_value());
  SimMigOptions three = no_delays();
  three.jobs_per_instance = 3;
  auto a = SimMig::create(engine, spec.value(), three);
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message().find("1 or 2"), std::string::npos);
  SimMigOptions unknown = sharing();
  unknown.share_mode = "no-such-mode";
  auto b = SimMig::create(engine, spec.value(), unknown);
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message().find("no-such-mode"), std::string::npos);
  EXPECT_NE(b.error().message().find("mps"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
