// The remap drill used to measure migration cost: a pure policy that alternates every context
// between two allowed partition sizes on its period, and the study that runs it beside exclusive.

#include "tessera/experiment/overheads.hpp"

#include <gtest/gtest.h>

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

TEST(RemapDrill, NoWorkKeepsThePartitions) {
  auto s = snapshot(core::millis(10), false);
  s.tenants[0].has_work = false;
  EXPECT_EQ(RemapDrill(core::millis(10)).decide(s).sms, (std::vector<int>{64, 16}));
}

TEST(RemapOverheads, DrilledRowsRemapAndExclusiveIsTheReference) {
  auto s = load_config(Config{.label = "", .scenario_file = "overheads.yaml"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  s->duration = core::millis(200);
  auto r = remap_overheads({core::millis(10)})(*s, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->modes.size(), 3u);
  EXPECT_EQ(r->modes[0].mode, "exclusive");
  EXPECT_EQ(r->modes[1].mode, "cogpu");
  EXPECT_EQ(r->modes[2].mode, drill_row(core::millis(10)));
  double remaps = -1;
  for (const auto& [name, value] : r->modes[2].counters) {
    if (name == "remaps") remaps = value;
  }
  // One move per 10 ms period of a 200 ms run, give or take the first and last.
  EXPECT_GE(remaps, 18);
  EXPECT_LE(remaps, 21);
}

}  // namespace
}  // namespace tessera::experiment
