#include "tessera/backends/sim/mig/sim_mig.hpp"

#include <gtest/gtest.h>

#include "backends/sim/mig/sim_mig_test_support.hpp"

namespace tessera::sim {
namespace {

using device::JobExitKind;
using test::custom_job;
using test::k1g;
using test::k3g;
using test::k4g;
using test::k7g;
using test::kGiB;
using test::make;
using test::no_delays;
using test::Recorder;
using workload::BatchJob;
using workload::BatchJobPtr;

TEST(SimMigTest, OutOfMemoryAtExactlyTheFirstIterationAbove) {
  Engine engine;
  auto mig = make(engine);
  auto inst = mig->create_instance(k1g, 0);
  ASSERT_TRUE(inst.has_value());
  auto job = std::make_shared<BatchJob>(*custom_job(20, core::millis(1)));
  job->memory.base_bytes = 4 * kGiB;
  job->memory.steps = {{.iteration = 7, .bytes = 2 * kGiB}};
  const std::int64_t expected = job->memory.first_iteration_above(inst->memory_bytes, 20);
  ASSERT_EQ(expected, 7);
  Recorder rec;
  ASSERT_TRUE(mig->start_job(inst->id, job, rec).has_value());
  ASSERT_TRUE(mig->run([&] { return !rec.exits.empty(); }).has_value());
  ASSERT_EQ(rec.exits.size(), 1U);
  EXPECT_EQ(rec.exits[0].kind, JobExitKind::kOutOfMemory);
  EXPECT_EQ(rec.exits[0].iterations_done, expected);
  EXPECT_EQ(rec.exits[0].peak_reserved_bytes, 4 * kGiB);
  EXPECT_EQ(rec.samples.size(), 7U);
  // 7 iterations of 1 ms x 98 / 14 on a 1g slice.
  EXPECT_EQ(rec.exits[0].at, 7 * core::millis(7));
  // The instance is free again.
  EXPECT_TRUE(mig->destroy_instance(inst->id).has_value());
}

TEST(SimMigTest, CompletesAndReportsEverySample) {
  Engine engine;
  auto mig = make(engine);
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder rec;
  auto run = mig->start_job(inst->id, custom_job(5, core::millis(2)), rec);
  ASSERT_TRUE(run.has_value());
  EXPECT_TRUE(rec.samples.empty());  // nothing is reported from inside start_job
  ASSERT_TRUE(mig->run([] { return false; }).has_value());
  ASSERT_EQ(rec.samples.size(), 5U);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rec.samples[i].iteration, static_cast<std::int64_t>(i));
    EXPECT_EQ(rec.samples[i].at, core::millis(2) * static_cast<core::Nanos>(i + 1));
    EXPECT_EQ(rec.samples[i].reserved_bytes, kGiB);  // no noise
  }
  ASSERT_EQ(rec.exits.size(), 1U);
  EXPECT_EQ(rec.exits[0].kind, JobExitKind::kCompleted);
  EXPECT_EQ(rec.exits[0].run, *run);
  EXPECT_EQ(rec.exits[0].iterations_done, 5);
  EXPECT_EQ(rec.exits[0].at, core::millis(10));
  EXPECT_EQ(mig->stats().elapsed, core::millis(10));
}

TEST(SimMigTest, StopKillsAtNowAndReportsFromTheLoop) {
  Engine engine;
  auto mig = make(engine);
  auto inst = mig->create_instance(k3g, 4);
  ASSERT_TRUE(inst.has_value());
  Recorder rec;
  auto run = mig->start_job(inst->id, custom_job(100, core::millis(1)), rec);
  ASSERT_TRUE(run.has_value());
  // Stop from inside the third sample, as an early restart does.
  rec.on_each_sample = [&](const device::JobSample& s) {
    if (s.iteration == 2) {
      ASSERT_TRUE(mig->stop_job(*run).has_value());
      EXPECT_TRUE(rec.exits.empty());
    }
  };
  ASSERT_TRUE(mig->run([&] { return !rec.exits.empty(); }).has_value());
  ASSERT_EQ(rec.exits.size(), 1U);
  EXPECT_EQ(rec.exits[0].kind, JobExitKind::kKilled);
  EXPECT_EQ(rec.exits[0].iterations_done, 3);
  EXPECT_EQ(rec.exits[0].at, rec.samples.back().at);
  EXPECT_EQ(rec.samples.size(), 3U);
  // Stopping a finished run is a no-op; an unknown run is an error.
  EXPECT_TRUE(mig->stop_job(*run).has_value());
  EXPECT_FALSE(mig->stop_job(*run + 100).has_value());
}

TEST(SimMigTest, DestroyWhileBusyIsRejected) {
  Engine engine;
  auto mig = make(engine);
  auto inst = mig->create_instance(k1g, 6);
  ASSERT_TRUE(inst.has_value());
  Recorder rec;
  ASSERT_TRUE(mig->start_job(inst->id, custom_job(3, core::millis(1)), rec).has_value());
  auto busy = mig->destroy_instance(inst->id);
  ASSERT_FALSE(busy.has_value());
  EXPECT_EQ(busy.error().code(), core::Code::kFailedPrecondition);
  // A second job on the same instance is refused too.
  EXPECT_FALSE(mig->start_job(inst->id, custom_job(3, core::millis(1)), rec).has_value());
  ASSERT_TRUE(mig->run([&] { return !rec.exits.empty(); }).has_value());
  EXPECT_TRUE(mig->destroy_instance(inst->id).has_value());
  EXPECT_TRUE(mig->instances().empty());
  EXPECT_EQ(mig->stats().instances_created, 1);
  EXPECT_EQ(mig->stats().instances_destroyed, 1);
}

TEST(SimMigTest, OverlappingCreateNamesTheOverlap) {
  Engine engine;
  auto mig = make(engine);
  auto four = mig->create_instance(k4g, 0);  // memory slices 0-3
  ASSERT_TRUE(four.has_value());
  auto overlap = mig->create_instance(k3g, 0);
  ASSERT_FALSE(overlap.has_value());
  const std::string& msg = overlap.error().message();
  EXPECT_NE(msg.find("overlap instance 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4g.20gb"), std::string::npos) << msg;
  // A placement the profile does not allow is refused by the layout rules.
  EXPECT_FALSE(mig->create_instance(k3g, 5).has_value());
  // The free half takes a 3g.
  auto three = mig->create_instance(k3g, 4);
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(three->uuid, "MIG-sim-A100-SXM4-40GB-2");
  EXPECT_EQ(three->sms, 42);
  const auto list = mig->instances();
  ASSERT_EQ(list.size(), 2U);
  EXPECT_EQ(list[0].start, 0);
  EXPECT_EQ(list[1].start, 4);
  EXPECT_FALSE(mig->create_instance(12345, 0).has_value());
}

TEST(SimMigTest, EnergyIsIdlePlusActive) {
  Engine engine;
  auto mig = make(engine);
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder rec;
  ASSERT_TRUE(mig->start_job(inst->id, custom_job(10, core::millis(10)), rec).has_value());
  ASSERT_TRUE(mig->run([] { return false; }).has_value());
  const auto stats = mig->stats();
  EXPECT_EQ(stats.elapsed, core::millis(100));
  const double active_watts = (400.0 - 52.0) * 98 / 108 * 0.6;
  EXPECT_NEAR(stats.energy_joules, 52.0 * 0.1 + active_watts * 0.1, 1e-9);
}

TEST(SimMigTest, KilledIterationCountsItsActiveEnergyProRata) {
  Engine engine;
  auto mig = make(engine);
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder rec;
  auto run = mig->start_job(inst->id, custom_job(10, core::millis(10)), rec);
  ASSERT_TRUE(run.has_value());
  engine.schedule_at(core::millis(15), [&] { ASSERT_TRUE(mig->stop_job(*run).has_value()); });
  ASSERT_TRUE(mig->run([&] { return !rec.exits.empty(); }).has_value());
  EXPECT_EQ(mig->stats().elapsed, core::millis(15));
  const double active_watts = (400.0 - 52.0) * 98 / 108 * 0.6;
  EXPECT_NEAR(mig->stats().energy_joules, 52.0 * 0.015 + active_watts * 0.015, 1e-9);
}

std::vector<device::JobSample> noisy_samples(std::uint64_t seed) {
  Engine engine;
  SimMigOptions o = no_delays();
  o.sample_noise = 0.05;
  o.seed = seed;
  auto mig = make(engine, o);
  auto inst = mig->create_instance(k7g, 0);
  Recorder rec;
  EXPECT_TRUE(mig->start_job(inst->id, custom_job(20, core::millis(1)), rec).has_value());
  EXPECT_TRUE(mig->run([] { return false; }).has_value());
  return rec.samples;
}

TEST(SimMigTest, SameSeedSameSamples) {
  const auto a = noisy_samples(7);
  const auto b = noisy_samples(7);
  const auto c = noisy_samples(8);
  ASSERT_EQ(a.size(), 20U);
  bool any_differs = false;
  bool any_noisy = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].reserved_bytes, b[i].reserved_bytes);
    EXPECT_EQ(a[i].requested_bytes, b[i].requested_bytes);
    any_differs |= a[i].reserved_bytes != c[i].reserved_bytes;
    any_noisy |= a[i].reserved_bytes != kGiB;
    EXPECT_GE(a[i].reserved_bytes, a[i].requested_bytes);
    EXPECT_NEAR(static_cast<double>(a[i].reserved_bytes), static_cast<double>(kGiB),
                0.3 * static_cast<double>(kGiB));
  }
  EXPECT_TRUE(any_differs);
  EXPECT_TRUE(any_noisy);
}

TEST(SimMigTest, CreateAndStartTimesDelayTheFirstIteration) {
  Engine engine;
  SimMigOptions o = no_delays();
  o.create_time = core::seconds(1);
  o.job_start_time = core::millis(300);
  auto mig = make(engine, o);
  auto inst = mig->create_instance(k7g, 0);
  ASSERT_TRUE(inst.has_value());
  Recorder rec;
  // Started at once: it begins when the instance exists and the process is up.
  ASSERT_TRUE(mig->start_job(inst->id, custom_job(2, core::millis(10)), rec).has_value());
  ASSERT_TRUE(mig->run([] { return false; }).has_value());
  ASSERT_EQ(rec.samples.size(), 2U);
  EXPECT_EQ(rec.samples[0].at, core::seconds(1) + core::millis(300) + core::millis(10));
}

TEST(SimMigTest, ReconfigurationsAreSerialised) {
  Engine engine;
  SimMigOptions o = no_delays();
  o.create_time = core::seconds(1);
  o.destroy_time = core::millis(500);
  auto mig = make(engine, o);
  auto a = mig->create_instance(k3g, 0);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(mig->destroy_instance(a->id).has_value());
  auto b = mig->create_instance(k3g, 4);
  ASSERT_TRUE(b.has_value());
  Recorder rec;
  ASSERT_TRUE(mig->start_job(b->id, custom_job(1, core::millis(10)), rec).has_value());
  ASSERT_TRUE(mig->run([] { return false; }).has_value());
  ASSERT_EQ(rec.samples.size(), 1U);
  // 1 s create, 0.5 s destroy, 1 s create, then the iteration (10 ms x 98 / 42).
  EXPECT_EQ(rec.samples[0].at, core::millis(2500) + core::round_to_nanos(10e6 * 98 / 42));
}

TEST(SimMigTest, RejectsBadInput) {
  Engine engine;
  auto spec = hw::find_gpu("a100-40gb");
  ASSERT_TRUE(spec.has_value());
  SimMigOptions o;
  o.create_time = -1;
  EXPECT_FALSE(SimMig::create(engine, *spec, o).has_value());
  auto mig = make(engine);
  Recorder rec;
  EXPECT_FALSE(mig->start_job(42, custom_job(1, core::millis(1)), rec).has_value());
  auto inst = mig->create_instance(k1g, 0);
  ASSERT_TRUE(inst.has_value());
  EXPECT_FALSE(mig->start_job(inst->id, nullptr, rec).has_value());
  EXPECT_FALSE(mig->start_job(inst->id, custom_job(0, core::millis(1)), rec).has_value());
  EXPECT_FALSE(mig->start_job(inst->id, custom_job(1, 0), rec).has_value());
  EXPECT_FALSE(mig->destroy_instance(99).has_value());
}

}  // namespace
}  // namespace tessera::sim
