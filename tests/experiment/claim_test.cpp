// Claims compare in the right direction: on a hand-made report whose numbers are known, a lower
// latency or a higher throughput is an improvement, the best of several baselines is the one
// compared with, and a figure that cannot be formed says why instead of passing.

#include "tessera/experiment/claim.hpp"

#include <gtest/gtest.h>

namespace tessera::experiment {
namespace {

metrics::TenantReport inference(const std::string& name, double e2e_p99, double tokens_per_s,
                                double attainment) {
  metrics::TenantReport t;
  t.name = name;
  t.kind = "inference";
  t.slo.ttft = core::millis(500);
  metrics::InferenceSummary s;
  s.arrived = 100;
  s.completed = 100;
  s.e2e_ms.count = 100;
  s.e2e_ms.p99 = e2e_p99;
  s.tpot_ms.count = 100;
  s.tpot_ms.p99 = e2e_p99 / 50;
  s.output_tokens_per_s = tokens_per_s;
  s.slo_attainment = attainment;
  t.inference = s;
  return t;
}

metrics::TenantReport training(const std::string& name, double samples_per_s) {
  metrics::TenantReport t;
  t.name = name;
  t.kind = "training";
  metrics::TrainingSummary s;
  s.samples_per_s = samples_per_s;
  t.training = s;
  return t;
}

metrics::ModeReport mode(const std::string& name, double e2e_p99, double tokens_per_s,
                         double attainment, double samples_per_s) {
  metrics::ModeReport m;
  m.mode = name;
  m.tenants = {inference("hp", e2e_p99, tokens_per_s, attainment), training("be", samples_per_s)};
  return m;
}

// hp alone: 100 ms and 1000 tok/s; be alone: 500 samples/s.
metrics::RunReport report() {
  metrics::RunReport r;
  r.modes = {mode("exclusive", 100, 1000, 0.99, 500), mode("mps", 1300, 900, 0.60, 300),
             mode("time-slicing", 400, 800, 0.80, 250), mode("ours", 100, 1000, 0.90, 400)};
  return r;
}

Metric hp_p99() {
  return Metric{.quantity = Quantity::kE2eP99Ms, .tenant = "hp", .counter = ""};
}

TEST(Claim, LowerLatencyIsTimesBetter) {
  auto v = improvement(report(), hp_p99(), "ours", "mps", Form::kTimes);
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_DOUBLE_EQ(*v, 13.0);  // 1300 ms against 100 ms
  auto worse = improvement(report(), hp_p99(), "mps", "ours", Form::kTimes);
  ASSERT_TRUE(worse.has_value());
  EXPECT_DOUBLE_EQ(*worse, 100.0 / 1300.0);
}

TEST(Claim, HigherThroughputIsPercentMore) {
  const Metric be{.quantity = Quantity::kThroughput, .tenant = "be", .counter = ""};
  auto v = improvement(report(), be, "ours", "time-slicing", Form::kPercent);
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_NEAR(*v, 60.0, 1e-9);  // 400 against 250 samples/s
  auto less = improvement(report(), be, "time-slicing", "ours", Form::kPercent);
  ASSERT_TRUE(less.has_value());
  EXPECT_NEAR(*less, -37.5, 1e-9);
}

TEST(Claim, FewerViolationsIsPercentFewer) {
  const Metric miss{.quantity = Quantity::kSloViolationPct, .tenant = "hp", .counter = ""};
  auto v = improvement(report(), miss, "ours", "time-slicing", Form::kPercent);
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_NEAR(*v, 50.0, 1e-9);  // 10% of requests missed against 20%
}

TEST(Claim, AggregateThroughputIsRelativeToEachTenantAlone) {
  const Metric sum{
      .quantity = Quantity::kAggregateNormalizedThroughput, .tenant = "", .counter = ""};
  auto v = metric_value(report(), sum, "mps");
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_NEAR(*v, 0.9 + 0.6, 1e-12);
  const Metric train{
      .quantity = Quantity::kTrainingNormalizedThroughput, .tenant = "", .counter = ""};
  auto t = metric_value(report(), train, "ours");
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(*t, 0.8, 1e-12);
}

TEST(Claim, TailAgainstRunningAlone) {
  const Metric vs_alone{.quantity = Quantity::kE2eP99VsAlone, .tenant = "hp", .counter = ""};
  auto v = metric_value(report(), vs_alone, "time-slicing");
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_DOUBLE_EQ(*v, 4.0);  // 400 ms against 100 ms alone
  EXPECT_TRUE(lower_is_better(vs_alone));
}

TEST(Claim, TokenTailAgainstRunningAlone) {
  const Metric tpot{.quantity = Quantity::kTpotP99VsAlone, .tenant = "hp", .counter = ""};
  auto v = metric_value(report(), tpot, "mps");
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_DOUBLE_EQ(*v, 13.0);  // 26 ms against 2 ms alone
  EXPECT_TRUE(lower_is_better(tpot));
  EXPECT_EQ(label(tpot), "hp tpot p99 x alone");
}

TEST(Claim, ThroughputAgainstMps) {
  const Metric vs_mps{.quantity = Quantity::kThroughputVsMps, .tenant = "be", .counter = ""};
  auto v = metric_value(report(), vs_mps, "ours");
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_DOUBLE_EQ(*v, 400.0 / 300.0);
  EXPECT_FALSE(lower_is_better(vs_mps));
  EXPECT_EQ(label(vs_mps), "be thr x mps");
  // Without an mps row there is nothing to compare with, and the message says so.
  metrics::RunReport no_mps = report();
  no_mps.modes.erase(no_mps.modes.begin() + 1);
  auto missing = metric_value(no_mps, vs_mps, "ours");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("needs the mps mode"), std::string::npos)
      << missing.error().message();
}

TEST(Claim, BestOfSeveralBaselinesIsTheStrongest) {
  const Claim c{.statement = "HP P99 vs best prior",
                .metric = hp_p99(),
                .subject = "ours",
                .baselines = {"mps", "time-slicing"},
                .form = Form::kTimes,
                .paper = 3.0};
  const ClaimResult r = evaluate(report(), c);
  ASSERT_TRUE(r.tessera.has_value()) << r.why_not;
  EXPECT_EQ(r.baseline, "time-slicing");
  EXPECT_DOUBLE_EQ(*r.tessera, 4.0);
  EXPECT_TRUE(r.same_direction);
}

TEST(Claim, OppositeDirectionIsReported) {
  const Claim c{.statement = "HP P99 vs MPS",
                .metric = hp_p99(),
                .subject = "mps",
                .baselines = {"ours"},
                .form = Form::kTimes,
                .paper = 13.0};
  const ClaimResult r = evaluate(report(), c);
  ASSERT_TRUE(r.tessera.has_value()) << r.why_not;
  EXPECT_FALSE(r.same_direction);
}

TEST(Claim, AMissingModeIsNotAPass) {
  const Claim c{.statement = "HP P99 vs MPS",
                .metric = hp_p99(),
                .subject = "lithos-not-run",
                .baselines = {"mps"},
                .form = Form::kTimes,
                .paper = 13.0};
  const ClaimResult r = evaluate(report(), c);
  EXPECT_FALSE(r.tessera.has_value());
  EXPECT_FALSE(r.same_direction);
  EXPECT_NE(r.why_not.find("mode 'lithos-not-run' was not run"), std::string::npos) << r.why_not;
}

TEST(Claim, ZeroLatencyGivesNoRatio) {
  auto r = report();
  r.modes[3].tenants[0].inference->e2e_ms.p99 = 0;
  auto v = improvement(r, hp_p99(), "ours", "mps", Form::kTimes);
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().message().find("under ours"), std::string::npos) << v.error().message();
}

TEST(Claim, NoFinishedRequestIsNotTheFastest) {
  auto r = report();
  r.modes[3].tenants[0].inference->e2e_ms = metrics::Percentiles{};  // nothing finished
  auto v = metric_value(r, hp_p99(), "ours");
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().message().find("no request of 'hp' got that far"), std::string::npos)
      << v.error().message();
  const Claim c{.statement = "HP P99 latency",
                .metric = hp_p99(),
                .subject = "ours",
                .baselines = {"mps"},
                .form = Form::kTimes,
                .paper = 13.0};
  EXPECT_FALSE(evaluate(r, c).tessera.has_value());
}

TEST(Claim, NormalizingNeedsTheExclusiveRun) {
  auto r = report();
  r.modes.erase(r.modes.begin());
  const Metric be{.quantity = Quantity::kNormalizedThroughput, .tenant = "be", .counter = ""};
  auto v = metric_value(r, be, "mps");
  ASSERT_FALSE(v.has_value());
  EXPECT_NE(v.error().message().find("exclusive"), std::string::npos) << v.error().message();
}

TEST(Claim, FiguresPrintInTheirForm) {
  EXPECT_EQ(format_figure(13.0, Form::kTimes), "13x");
  EXPECT_EQ(format_figure(79.2, Form::kPercent), "+79.2%");
  EXPECT_EQ(format_figure(-12.5, Form::kPercent), "-12.5%");
}

}  // namespace
}  // namespace tessera::experiment
