// The studies that switch lithos's own options: each variant is a row under its label with the
// option applied, and the held-out sweep fits on two TPC counts and scores every other one.

#include "tessera/experiment/lithos_studies.hpp"

#include <gtest/gtest.h>

#include "tessera/experiment/sim_backend.hpp"

namespace tessera::experiment {
namespace {

scenario::Scenario options_scenario() {
  auto s = load_config(Config{.label = "", .scenario_file = "lithos-options.yaml"});
  EXPECT_TRUE(s.has_value()) << s.error().message();
  return s.value();
}

double counter_of(const metrics::ModeReport& m, const std::string& name) {
  for (const auto& [n, v] : m.counters) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no counter " << name << " in " << m.mode;
  return -1;
}

TEST(LithosStudies, SweepScoresTheCountsItDidNotFit) {
  auto s = options_scenario();
  auto row = held_out_sweep(s);
  ASSERT_TRUE(row.has_value()) << row.error().message();
  EXPECT_EQ(row->mode, kSweepRow);
  const double kernels = counter_of(*row, "kernels_profiled");
  const double points = counter_of(*row, "held_out_points");
  EXPECT_GT(kernels, 10);  // a decoder step, a prefill and a ResNet-50 iteration
  // A100: 54 TPCs, swept at 1, 2, 4, 8, 16, 32 and 54; fitted on 1 and 54, so 5 held out each
  // (fewer for a kernel whose held-out latencies were all zero).
  EXPECT_LE(points, 5 * kernels);
  EXPECT_GE(points, kernels);
  const double mean = counter_of(*row, "held_out_mean_err_pct");
  const double worst = counter_of(*row, "held_out_max_err_pct");
  EXPECT_GT(mean, 0);  // wave quantization keeps a two-point m/t + b fit from being exact
  EXPECT_LE(mean, worst);
}

TEST(LithosStudies, EachVariantIsARowWithItsOptionApplied) {
  auto s = options_scenario();
  s.duration = core::seconds(1);
  const RunFn run =
      lithos_variants({{.label = "off", .apply = [](gpu::LithosOptions& o) { o.dvfs = false; }},
                       {.label = "on", .apply = [](gpu::LithosOptions& o) { o.dvfs = true; }}},
                      /*sweep=*/false);
  scenario::RunOptions options;
  options.backend = sim_backends();
  auto r = run(s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->modes.size(), 2u);
  EXPECT_EQ(r->modes[0].mode, "off");
  EXPECT_EQ(r->modes[1].mode, "on");
  // Only the governor changes clocks, so only the row with DVFS on may report a change.
  EXPECT_EQ(counter_of(r->modes[0], "clock_changes"), 0);
}

}  // namespace
}  // namespace tessera::experiment
