// flextopo-serving on a reduced plan (20 nodes, 2 cycles, 10 replicas, 3 minutes of trace): the
// serving side moves the way the penalties say, the cluster side's accounting adds up, guaranteed
// replicas under the topology-aware searches serve only on one NUMA node, and the run is
// deterministic.

#include "tessera/experiment/flextopo_serving.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tessera::experiment {
namespace {

FlextopoServingPlan small_plan() {
  FlextopoServingPlan p;
  p.nodes = 20;
  p.cycles = 2;
  p.replicas = 10;
  p.alphas = {0.0, 1.0};
  p.trace_window = 3 * 60 * core::kNanosPerSecond;
  p.trace_share = 1;
  p.capacity_requests = 32;
  return p;
}

const FlextopoResult& small_run() {
  static const FlextopoResult r = [] {
    auto run = run_flextopo_serving(FlextopoOptions{}, small_plan());
    EXPECT_TRUE(run.has_value()) << run.error().message();
    return run.value_or(FlextopoResult{});
  }();
  return r;
}

TEST(FlextopoServing, ReplicasSlowDownWithThePenalty) {
  const auto& reps = small_run().json.at("replica_by_placement");
  ASSERT_EQ(reps.size(), 3u);
  EXPECT_EQ(reps[0].at("affinity"), "same-numa");
  EXPECT_EQ(reps[2].at("affinity"), "cross-socket");
  for (std::size_t i = 1; i < reps.size(); ++i) {
    const auto& a = reps[i - 1];
    const auto& b = reps[i];
    EXPECT_GT(b.at("penalty").get<double>(), a.at("penalty").get<double>());
    // A step spends more of its time in collectives, and takes longer.
    for (const char* s : {"prefill_2048", "decode_8x2048"}) {
      EXPECT_GT(b.at(s).at("ms").get<double>(), a.at(s).at("ms").get<double>()) << s;
      EXPECT_GT(b.at(s).at("communication_share").get<double>(),
                a.at(s).at("communication_share").get<double>())
          << s;
    }
    EXPECT_GE(b.at("ttft_ms").at("p99").get<double>(), a.at("ttft_ms").at("p99").get<double>());
    EXPECT_GT(b.at("tpot_ms").at("p50").get<double>(), a.at("tpot_ms").at("p50").get<double>());
    EXPECT_LT(b.at("capacity").at("output_tokens_per_s").get<double>(),
              a.at("capacity").at("output_tokens_per_s").get<double>());
  }
  EXPECT_GT(reps[0].at("requests").get<int>(), 50);
}

TEST(FlextopoServing, EveryReplicaIsServingOrLost) {
  const auto& j = small_run().json;
  const auto& rows = j.at("rows");
  // 2 presets x 2 QoS x (incremental and exhaustive at 2 alphas + default-k8s once).
  ASSERT_EQ(rows.size(), 20u);
  for (const auto& r : rows) {
    SCOPED_TRACE(r.dump());
    const auto& s = r.at("serving");
    const auto serving = s.at("same-numa").get<std::int64_t>() +
                         s.at("same-socket").get<std::int64_t>() +
                         s.at("cross-socket").get<std::int64_t>();
    const auto lost = r.at("lost").at("unplaced").get<std::int64_t>() +
                      r.at("lost").at("refused").get<std::int64_t>();
    EXPECT_EQ(serving + lost, r.at("replicas").get<std::int64_t>());
    EXPECT_EQ(r.at("replicas").get<std::int64_t>(), 2 * 10);
    if (r.at("qos") == "best-effort") {
      EXPECT_EQ(r.at("lost").at("refused"), 0);
    }
    if (r.at("qos") == "guaranteed" && r.at("method") != "default-k8s") {
      // The topology-aware searches bind a guaranteed replica only where it gets its NUMA node.
      EXPECT_EQ(s.at("same-socket"), 0);
      EXPECT_EQ(s.at("cross-socket"), 0);
      EXPECT_EQ(r.at("lost").at("refused"), 0);
      // All of it serves at 1x, so the mixture is the same-NUMA replica's distribution.
      if (s.at("same-numa").get<std::int64_t>() > 0) {
        EXPECT_DOUBLE_EQ(r.at("ttft_ms").at("p99").get<double>(),
                         j.at("replica_by_placement")[0].at("ttft_ms").at("p99").get<double>());
      }
    }
    // Lost replicas serve nothing: the per-scale-up rate is at most every replica at 1x.
    const double best = j.at("replica_by_placement")[0].at("capacity").at("output_tokens_per_s");
    EXPECT_LE(r.at("throughput_output_tokens_per_s").at("per_replica_asked").get<double>(),
              best + 1e-6);
  }
}

TEST(FlextopoServing, SameSeedSameBytes) {
  auto again = run_flextopo_serving(FlextopoOptions{}, small_plan());
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->json.dump(), small_run().json.dump());
  EXPECT_EQ(again->text, small_run().text);
  EXPECT_NE(small_run().text.find("default-k8s"), std::string::npos);
}

TEST(FlextopoServing, RejectsABadPlanNamingTheField) {
  FlextopoServingPlan p = small_plan();
  p.alphas = {0.5, 1.5};
  auto r = run_flextopo_serving(FlextopoOptions{}, p);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("alpha 1.5"), std::string::npos) << r.error().message();
  p = small_plan();
  p.replicas = 0;
  r = run_flextopo_serving(FlextopoOptions{}, p);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("replicas (0)"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tessera::experiment
