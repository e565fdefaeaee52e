// The remap drill used to measure migration cost: a pure policy that alternates every context
// between two allowed partition sizes on its period, and the study that runs it beside exclusive.

#include "tessera/experiment/overheads.hpp"

#include <gtest/gtest.h>

#include "tessera/experiment/sim_backend.hpp"

namespace tessera::experiment {
namespace {

gpu::RemapSnapshot snapshot(core::Nanos now, bool second_has_work) {
  gpu::RemapSnapshot s;
  s.now = now;
  s.grid = gpu::PartitionGrid{.granularity = 8, .min_sms = 8, .usable_sms = 128, .device_sms = 132};
  s.tenants.resize(2);
  s.tenants[0].has_work = true;
  s.tenants[0].sms = 64;
  s.tenants[1].has_work = second_has_work;
  s.tenants[1].sms = 16;
  return s;
}

TEST(RemapDrill, AlternatesBetweenTwoGridSizesOnItsPeriod) {
  const RemapDrill drill(core::millis(10));
  EXPECT_EQ(drill.decide(snapshot(core::millis(3), true)).sms, (std::vector<int>{64, 64}));
  EXPECT_EQ(drill.decide(snapshot(core::millis(13), true)).sms, (std::vector<int>{56, 56}));
  EXPECT_EQ(drill.decide(snapshot(core::millis(23), true)).sms, (std::vector<int>{64, 64}));
}

TEST(RemapDrill, OnlyContextsWithWorkGetSms) {
  const RemapDrill drill(core::millis(10));
  EXPECT_EQ(drill.decide(snapshot(0, false)).sms, (std::vector<int>{128, 0}));
  EXPECT_EQ(drill.decide(snapshot(core::millis(10), false)).sms, (std::vector<int>{120, 0}));
}

TEST(RemapDrill, AsksToBeRevisitedAtTheNextPeriod) {
  const RemapDrill drill(core::millis(10));
  EXPECT_EQ(drill.decide(snapshot(core::millis(3), true)).revisit_at, core::millis(10));
  EXPECT_EQ(drill.decide(snapshot(core::millis(10), true)).revisit_at, core::millis(20));
}

TEST(RemapDrill, NoWorkKeepsThePartitions) {
  auto s = snapshot(core::millis(10), false);
  s.tenants[0].has_work = false;
  EXPECT_EQ(RemapDrill(core::millis(10)).decide(s).sms, (std::vector<int>{64, 16}));
}

double counter(const metrics::ModeReport& row, std::string_view name) {
  for (const auto& [n, value] : row.counters) {
    if (n == name) return value;
  }
  return -1;
}

TEST(RemapOverheads, DrilledRowsRemapAndExclusiveIsTheReference) {
  auto s = load_config(Config{.label = "", .scenario_file = "overheads.yaml"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  s->duration = core::millis(200);
  scenario::RunOptions options;
  options.backend = sim_backends();
  auto r = remap_overheads({core::millis(10)})(*s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->modes.size(), 3u);
  EXPECT_EQ(r->modes[0].mode, "exclusive");
  EXPECT_EQ(r->modes[1].mode, "cogpu");
  EXPECT_EQ(r->modes[2].mode, drill_row(core::millis(10)));
  // One move per 10 ms period of a 200 ms run, give or take the first and last.
  const double remaps = counter(r->modes[2], "remaps");
  EXPECT_GE(remaps, 18);
  EXPECT_LE(remaps, 21);
}

TEST(PreemptionOverheads, PersistentRowsPreemptAndPlainRowsCannot) {
  auto s = load_config(Config{.label = "", .scenario_file = "overheads.yaml"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_TRUE(s->tenants[0].training.persistent.has_value());
  s->duration = core::millis(200);
  scenario::RunOptions options;
  options.backend = sim_backends();
  auto r = preemption_overheads({core::millis(10)})(*s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const std::string drill = drill_row(core::millis(10));
  std::vector<std::string> rows;
  for (const auto& m : r->modes) rows.push_back(m.mode);
  EXPECT_EQ(rows, (std::vector<std::string>{"exclusive", "cogpu", drill, "persistent exclusive",
                                            "persistent cogpu", persistent_row(drill)}));
  // The job as built has no checkpoints: its remaps wait for kernel boundaries.
  EXPECT_EQ(counter(r->modes[2], "preemptions"), 0);
  EXPECT_GE(counter(r->modes[2], "remaps"), 18);
  // With persistent kernels, remaps that land mid-kernel stop it at a checkpoint.
  EXPECT_GT(counter(r->modes[5], "preemptions"), 0);
  EXPECT_GE(counter(r->modes[5], "remaps"), 18);
  // No drill, no preemption.
  EXPECT_EQ(counter(r->modes[4], "preemptions"), 0);
  // The persistent job ran iterations alone and under the drill, no faster under the drill.
  const auto& alone = r->modes[3].tenants.at(0).training;
  const auto& drilled = r->modes[5].tenants.at(0).training;
  ASSERT_TRUE(alone.has_value() && drilled.has_value());
  EXPECT_GT(drilled->iterations, 0u);
  EXPECT_LE(drilled->samples_per_s, alone->samples_per_s);
}

TEST(PreemptionOverheads, NeedsATenantWithPersistentKernels) {
  auto s = load_config(Config{.label = "", .scenario_file = "overheads.yaml"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  s->tenants[0].training.persistent.reset();
  s->duration = core::millis(20);
  scenario::RunOptions options;
  options.backend = sim_backends();
  auto r = preemption_overheads({core::millis(10)})(*s, options);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("persistent_gemms"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tessera::experiment
