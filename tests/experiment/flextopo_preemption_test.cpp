// flextopo-preemption at a reduced size: its invariants and determinism.

#include "tessera/experiment/flextopo_preemption.hpp"

#include <gtest/gtest.h>

namespace tessera::experiment {
namespace {

FlextopoPreemptionPlan small_plan() {
  FlextopoPreemptionPlan p;
  p.nodes = 5;
  p.cycles = 3;
  p.preemptions_per_cycle = 10;
  p.variation_cycles = 1;
  return p;
}

const nlohmann::json& method(const nlohmann::json& methods, const std::string& name) {
  for (const auto& m : methods) {
    if (m["method"] == name) return m;
  }
  ADD_FAILURE() << "no method " << name;
  static const nlohmann::json empty;
  return empty;
}

TEST(FlextopoPreemption, InvariantsOnASmallCluster) {
  auto r = run_flextopo_preemption({}, small_plan());
  ASSERT_TRUE(r) << r.error().message();
  const nlohmann::json& main = r->json["main"];
  ASSERT_EQ(main["methods"].size(), 3u);
  for (const auto& m : main["methods"]) {
    EXPECT_EQ(m["preemptors"], 30);
    EXPECT_EQ(m["preemptions"].get<int>() + m["placed_without_preemption"].get<int>() +
                  m["no_candidate"].get<int>(),
              30);
    EXPECT_LE(m["victims_per_preemption"]["p99"].get<double>(), 4.0);  // max_victims
    // Saturated: the preemptors need preemption.
    EXPECT_GT(m["preemptions"].get<int>(), 0);
  }
  const auto& inc = method(main["methods"], "incremental");
  const auto& exh = method(main["methods"], "exhaustive");
  const auto& def = method(main["methods"], "default-k8s");
  EXPECT_GE(inc["hit_rate"].get<double>(), def["hit_rate"].get<double>());
  EXPECT_GE(exh["hit_rate"].get<double>(), def["hit_rate"].get<double>());
  // IMP stops at the first size with a candidate; exhaustive weighs every size.
  EXPECT_LE(inc["sets_evaluated"]["mean"].get<double>(),
            exh["sets_evaluated"]["mean"].get<double>());
  EXPECT_LE(inc["victims_per_preemption"]["mean"].get<double>(),
            exh["victims_per_preemption"]["mean"].get<double>() + 1e-9);
  const auto& ci = inc["hit_rate_cycles"];
  EXPECT_LE(ci["ci95_low"].get<double>(), ci["mean"].get<double>());
  EXPECT_GE(ci["ci95_high"].get<double>(), ci["mean"].get<double>());
  EXPECT_LE(ci["worst"].get<double>(), ci["mean"].get<double>());
  EXPECT_EQ(r->json["variations"].size(), 10u);
  EXPECT_NE(r->text.find("44.5%"), std::string::npos);
  EXPECT_NE(r->text.find("default-k8s"), std::string::npos);
}

TEST(FlextopoPreemption, SameSeedSameBytes) {
  auto a = run_flextopo_preemption({}, small_plan());
  auto b = run_flextopo_preemption({}, small_plan());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->json.dump(), b->json.dump());
  EXPECT_EQ(a->text, b->text);
  FlextopoOptions other;
  other.seed = 99;
  auto c = run_flextopo_preemption(other, small_plan());
  ASSERT_TRUE(c);
  EXPECT_NE(a->json.dump(), c->json.dump());
}

TEST(FlextopoPreemption, ReportsProgressAndRejectsEmptyPlans) {
  std::int64_t last = 0, total = 0;
  FlextopoOptions o;
  o.progress = [&](std::int64_t done, std::int64_t all, std::string_view) {
    EXPECT_GT(done, last);
    last = done;
    total = all;
  };
  FlextopoPreemptionPlan p = small_plan();
  p.variation_cycles = 0;
  ASSERT_TRUE(run_flextopo_preemption(o, p));
  EXPECT_EQ(last, total);
  EXPECT_EQ(total, 9);  // 3 cycles x 3 methods
  p.cycles = 0;
  auto r = run_flextopo_preemption({}, p);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("cycles 0"), std::string::npos);
}

}  // namespace
}  // namespace tessera::experiment
