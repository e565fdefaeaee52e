#include "tessera/metrics/latency.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::metrics {
namespace {

using core::millis;

TEST(Summarize, EmptyGivesZeros) {
  const Percentiles p = summarize({});
  EXPECT_EQ(p.count, 0u);
  EXPECT_EQ(p.mean, 0);
  EXPECT_EQ(p.p50, 0);
  EXPECT_EQ(p.p90, 0);
  EXPECT_EQ(p.p99, 0);
  EXPECT_EQ(p.max, 0);
}

TEST(Summarize, OneElementIsEveryPercentile) {
  const Percentiles p = summarize({7.5});
  EXPECT_EQ(p.count, 1u);
  EXPECT_EQ(p.mean, 7.5);
  EXPECT_EQ(p.p50, 7.5);
  EXPECT_EQ(p.p90, 7.5);
  EXPECT_EQ(p.p99, 7.5);
  EXPECT_EQ(p.max, 7.5);
}

TEST(Summarize, NearestRankOnOneToHundred) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i);  // unsorted on purpose
  const Percentiles p = summarize(values);
  EXPECT_EQ(p.count, 100u);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);  // rank ceil(0.99 * 100) = 99, not 100
  EXPECT_EQ(p.max, 100);
}

TEST(Summarize, NearestRankRoundsRankUp) {
  // n = 10: p50 -> rank 5, p90 -> rank 9, p99 -> rank ceil(9.9) = 10.
  const Percentiles p = summarize({10, 20, 30, 40, 50, 60, 70, 80, 90, 100});
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 100);
  // n = 3: p50 -> rank ceil(1.5) = 2.
  EXPECT_EQ(summarize({3, 1, 2}).p50, 2);
}

TEST(Summarize, TiesAreReturnedAsInputValues) {
  const Percentiles p = summarize({5, 1, 5, 5, 9});
  EXPECT_EQ(p.p50, 5);  // rank 3 of {1, 5, 5, 5, 9}
  EXPECT_EQ(p.p90, 9);  // rank ceil(4.5) = 5
  EXPECT_EQ(p.max, 9);
  EXPECT_DOUBLE_EQ(p.mean, 5);
}

RequestRecord request(core::Nanos arrival, core::Nanos first_token, core::Nanos finished,
                      int output_tokens) {
  RequestRecord r;
  r.arrival = arrival;
  r.first_token = first_token;
  r.finished = finished;
  r.input_tokens = 100;
  r.output_tokens = output_tokens;
  return r;
}

TEST(RequestRecord, TpotIsMeanGapAfterFirstToken) {
  // 5 tokens: the first at 100 ms, the other four by 180 ms -> 20 ms each.
  EXPECT_EQ(request(0, millis(100), millis(180), 5).tpot(), millis(20));
  EXPECT_EQ(request(0, millis(100), millis(180), 5).ttft(), millis(100));
  EXPECT_EQ(request(0, millis(100), millis(180), 5).e2e(), millis(180));
}

TEST(RequestRecord, TpotIsZeroForOneOrNoTokensAndWhileUnfinished) {
  EXPECT_EQ(request(0, millis(10), millis(10), 1).tpot(), 0);
  EXPECT_EQ(request(0, millis(10), millis(10), 0).tpot(), 0);
  EXPECT_EQ(request(0, millis(10), -1, 8).tpot(), 0);
  EXPECT_FALSE(request(0, millis(10), -1, 8).done());
  // Two tokens: the single gap is the whole decode time.
  EXPECT_EQ(request(0, millis(10), millis(25), 2).tpot(), millis(15));
}

// Four arrived requests, one unfinished, one not yet arrived at the end of the run.
std::vector<RequestRecord> mixed_requests() {
  return {
      request(0, millis(50), millis(140), 10),            // ttft 50, tpot 10
      request(millis(10), millis(210), millis(300), 10),  // ttft 200, tpot 10
      request(millis(20), millis(80), millis(350), 10),   // ttft 60, tpot 30
      request(millis(30), millis(90), -1, 10),            // unfinished
      request(core::seconds(5), -1, -1, 10),              // arrives after the run
  };
}

TEST(SummarizeInference, CountsArrivedAndCompleted) {
  const auto records = mixed_requests();
  const InferenceSummary s = summarize_inference(records, {}, core::seconds(1));
  EXPECT_EQ(s.arrived, 4u);
  EXPECT_EQ(s.completed, 3u);
  // The unfinished request has its first token (ttft 60), so TTFT counts it; TPOT and E2E do not.
  EXPECT_EQ(s.ttft_ms.count, 4u);
  EXPECT_EQ(s.tpot_ms.count, 3u);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p50, 60);
  EXPECT_DOUBLE_EQ(s.ttft_ms.max, 200);
  EXPECT_DOUBLE_EQ(s.tpot_ms.p99, 30);
  EXPECT_DOUBLE_EQ(s.e2e_ms.max, 330);
  // 30 output tokens of completed requests over 1 s; the unfinished request counts nothing.
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 30);
}

TEST(SummarizeInference, NoTargetsMeansCompletedOverArrived) {
  const auto records = mixed_requests();
  EXPECT_DOUBLE_EQ(summarize_inference(records, {}, core::seconds(1)).slo_attainment, 0.75);
}

TEST(SummarizeInference, TtftTargetOnly) {
  const auto records = mixed_requests();
  // TTFT <= 100 ms: requests 1 and 3 of 4 arrived.
  const Slo slo{.ttft = millis(100), .tpot = 0};
  EXPECT_DOUBLE_EQ(summarize_inference(records, slo, core::seconds(1)).slo_attainment, 0.5);
}

TEST(SummarizeInference, TpotTargetOnly) {
  const auto records = mixed_requests();
  // TPOT <= 10 ms: requests 1 and 2.
  const Slo slo{.ttft = 0, .tpot = millis(10)};
  EXPECT_DOUBLE_EQ(summarize_inference(records, slo, core::seconds(1)).slo_attainment, 0.5);
}

TEST(SummarizeInference, BothTargetsMustHold) {
  const auto records = mixed_requests();
  // Only request 1 meets TTFT <= 100 ms and TPOT <= 10 ms.
  const Slo slo{.ttft = millis(100), .tpot = millis(10)};
  EXPECT_DOUBLE_EQ(summarize_inference(records, slo, core::seconds(1)).slo_attainment, 0.25);
}

TEST(SummarizeInference, TargetsAreInclusive) {
  const auto records = mixed_requests();
  const Slo slo{.ttft = millis(200), .tpot = millis(30)};
  EXPECT_DOUBLE_EQ(summarize_inference(records, slo, core::seconds(1)).slo_attainment, 0.75);
}

TEST(SummarizeInference, NothingArrivedGivesZeros) {
  const InferenceSummary s = summarize_inference({}, {}, 0);
  EXPECT_EQ(s.arrived, 0u);
  EXPECT_EQ(s.slo_attainment, 0);
  EXPECT_EQ(s.output_tokens_per_s, 0);
  EXPECT_EQ(s.ttft_ms.count, 0u);
}

TEST(SummarizeTraining, RatesAndIterationTimes) {
  const std::vector<IterationRecord> iterations = {
      {0, millis(100)}, {millis(100), millis(300)}, {millis(300), millis(400)}};
  const TrainingSummary s = summarize_training(iterations, 32, core::seconds(2));
  EXPECT_EQ(s.iterations, 3u);
  EXPECT_DOUBLE_EQ(s.iterations_per_s, 1.5);
  EXPECT_DOUBLE_EQ(s.samples_per_s, 48);
  EXPECT_EQ(s.iteration_ms.count, 3u);
  EXPECT_DOUBLE_EQ(s.iteration_ms.p50, 100);
  EXPECT_DOUBLE_EQ(s.iteration_ms.max, 200);
  EXPECT_NEAR(s.iteration_ms.mean, 400.0 / 3, 1e-9);
}

TEST(SummarizeTraining, ZeroElapsedGivesZeroRates) {
  const std::vector<IterationRecord> iterations = {{0, millis(100)}};
  const TrainingSummary s = summarize_training(iterations, 8, 0);
  EXPECT_EQ(s.iterations, 1u);
  EXPECT_EQ(s.iterations_per_s, 0);
  EXPECT_EQ(s.samples_per_s, 0);
}

}  // namespace
}  // namespace tessera::metrics
