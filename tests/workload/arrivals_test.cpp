#include "tessera/workload/arrivals.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::workload {
namespace {

struct GapStats {
  double mean_s;
  double variance_s2;
};

GapStats gap_stats(const std::vector<Request>& r) {
  std::vector<double> gaps;
  core::Nanos prev = 0;
  for (const auto& q : r) {
    gaps.push_back(core::to_seconds(q.arrival - prev));
    prev = q.arrival;
  }
  double mean = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size() - 1);
  return {mean, var};
}

SyntheticArrivals spec(double rate, double cv) {
  return SyntheticArrivals{.rate_per_s = rate,
                           .cv = cv,
                           .input_tokens = {.min = 10, .max = 20},
                           .output_tokens = {.min = 1, .max = 5}};
}

TEST(ArrivalsTest, PoissonGapsHaveMeanAndVarianceOfTheExponential) {
  const core::RandomStreams streams(42);
  auto r = generate_arrivals(spec(100, 1.0), core::seconds(1000), streams, "chat");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  // About 100,000 gaps: the standard error of the mean gap is 0.3%, of the variance about 0.9%
  // (sqrt(8/n) for the exponential). Tolerances are several standard errors.
  const double n = static_cast<double>(r->size());
  EXPECT_NEAR(n, 100'000, 5 * std::sqrt(100'000.0));
  const GapStats s = gap_stats(*r);
  EXPECT_NEAR(s.mean_s / 0.01, 1.0, 0.015);
  EXPECT_NEAR(s.variance_s2 / (0.01 * 0.01), 1.0, 0.05);
}

TEST(ArrivalsTest, GammaGapsHaveTheRequestedCoefficientOfVariation) {
  const core::RandomStreams streams(7);
  for (double cv : {0.5, 2.0, 4.0}) {
    auto r = generate_arrivals(spec(200, cv), core::seconds(1000), streams, "burst");
    ASSERT_TRUE(r.has_value()) << r.error().message();
    const GapStats s = gap_stats(*r);
    // Gamma(shape 1/cv^2) gaps: heavier tails for larger cv, hence the wider tolerance there.
    EXPECT_NEAR(s.mean_s / (1.0 / 200), 1.0, 0.01 * cv + 0.01) << "cv " << cv;
    EXPECT_NEAR(std::sqrt(s.variance_s2) / s.mean_s / cv, 1.0, 0.02 * cv + 0.02) << "cv " << cv;
  }
}

TEST(ArrivalsTest, LengthsAreUniformWithinTheirRanges) {
  const core::RandomStreams streams(3);
  auto r = generate_arrivals(spec(1000, 1.0), core::seconds(100), streams, "len");
  ASSERT_TRUE(r.has_value());
  std::vector<int> seen_in(21, 0);
  double out_sum = 0;
  for (const auto& q : *r) {
    ASSERT_GE(q.input_tokens, 10);
    ASSERT_LE(q.input_tokens, 20);
    ASSERT_GE(q.output_tokens, 1);
    ASSERT_LE(q.output_tokens, 5);
    ++seen_in[q.input_tokens];
    out_sum += q.output_tokens;
  }
  for (int v = 10; v <= 20; ++v) EXPECT_GT(seen_in[v], 0) << v;
  EXPECT_NEAR(out_sum / static_cast<double>(r->size()), 3.0, 0.05);
}

TEST(ArrivalsTest, IdsCountUpAndArrivalsStayInsideTheHorizon) {
  const core::RandomStreams streams(1);
  const core::Nanos horizon = core::seconds(10);
  auto r = generate_arrivals(spec(50, 3.0), horizon, streams, "x");
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->empty());
  core::Nanos prev = 0;
  for (std::size_t i = 0; i < r->size(); ++i) {
    EXPECT_EQ((*r)[i].id, i);
    EXPECT_GE((*r)[i].arrival, prev);
    EXPECT_LT((*r)[i].arrival, horizon);
    prev = (*r)[i].arrival;
  }
}

TEST(ArrivalsTest, SameSeedAndNameGiveTheSameRequests) {
  auto a = generate_arrivals(spec(20, 2.0), core::seconds(60), core::RandomStreams(9), "t");
  auto b = generate_arrivals(spec(20, 2.0), core::seconds(60), core::RandomStreams(9), "t");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->size(), b->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].arrival, (*b)[i].arrival);
    EXPECT_EQ((*a)[i].input_tokens, (*b)[i].input_tokens);
    EXPECT_EQ((*a)[i].output_tokens, (*b)[i].output_tokens);
  }
}

TEST(ArrivalsTest, OtherSeedsAndNamesGiveOtherRequests) {
  const auto base =
      *generate_arrivals(spec(20, 1.0), core::seconds(60), core::RandomStreams(9), "t");
  const auto seed =
      *generate_arrivals(spec(20, 1.0), core::seconds(60), core::RandomStreams(10), "t");
  const auto name =
      *generate_arrivals(spec(20, 1.0), core::seconds(60), core::RandomStreams(9), "u");
  EXPECT_NE(base.front().arrival, seed.front().arrival);
  EXPECT_NE(base.front().arrival, name.front().arrival);
}

TEST(ArrivalsTest, ZeroHorizonGivesNoRequests) {
  auto r = generate_arrivals(spec(20, 1.0), 0, core::RandomStreams(1), "t");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->empty());
}

void expect_rejected(const SyntheticArrivals& s, core::Nanos horizon, std::string_view mention) {
  auto r = generate_arrivals(s, horizon, core::RandomStreams(1), "svc");
  ASSERT_FALSE(r.has_value()) << mention;
  EXPECT_EQ(r.error().domain(), core::Domain::kWorkload);
  EXPECT_NE(r.error().message().find(mention), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("svc"), std::string::npos) << r.error().message();
}

TEST(ArrivalsTest, BadSpecsAreRejectedWithTheFieldNamed) {
  expect_rejected(spec(0, 1), core::seconds(1), "rate");
  expect_rejected(spec(-5, 1), core::seconds(1), "rate");
  expect_rejected(spec(NAN, 1), core::seconds(1), "rate");
  expect_rejected(spec(10, 0), core::seconds(1), "cv");
  expect_rejected(spec(10, INFINITY), core::seconds(1), "cv");
  SyntheticArrivals s = spec(10, 1);
  s.input_tokens = {.min = 0, .max = 5};
  expect_rejected(s, core::seconds(1), "input_tokens");
  s = spec(10, 1);
  s.output_tokens = {.min = 6, .max = 5};
  expect_rejected(s, core::seconds(1), "output_tokens");
  expect_rejected(spec(10, 1), -1, "horizon");
  // An unbounded horizon would never end: it is refused by the request limit.
  expect_rejected(spec(10, 1), core::kNever, "limit");
}

}  // namespace
}  // namespace tessera::workload
