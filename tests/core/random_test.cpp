#include "tessera/core/random.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace tessera::core {
namespace {

// Mean and variance of n draws.
template <typename Draw>
std::pair<double, double> moments(int n, Draw draw) {
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  return {mean, sum_sq / n - mean * mean};
}

constexpr int kDraws = 200'000;

TEST(RandomStream, MatchesReferenceXoshiro256StarStar) {
  // Expected values computed independently from the published splitmix64 and xoshiro256**
  // algorithms (Vigna); splitmix64(0) = 0xe220a8397b1dcdaf is the reference first output.
  RandomStream r(0);
  EXPECT_EQ(r.next_u64(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(r.next_u64(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(r.next_u64(), 0x1a5f849d4933e6e0ULL);
}

TEST(RandomStreams, NamedStreamMatchesReference) {
  // Stream seed = splitmix64(seed XOR fnv1a64(name)); values computed independently.
  RandomStream r = RandomStreams(42).stream("arrivals/chat");
  EXPECT_EQ(r.next_u64(), 0x05f424d0e654d70aULL);
  EXPECT_EQ(r.next_u64(), 0x426c408ff130f8e2ULL);
  EXPECT_EQ(r.next_u64(), 0xae81813c50081c11ULL);
}

TEST(RandomStreams, SameSeedAndNameGiveTheSameSequence) {
  RandomStreams a(7);
  RandomStreams b(7);
  RandomStream x = a.stream("lengths/chat");
  RandomStream y = b.stream("lengths/chat");
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(x.next_u64(), y.next_u64()) << i;
  EXPECT_EQ(a.seed(), 7u);
}

TEST(RandomStreams, AskingForAStreamDoesNotDisturbAnother) {
  RandomStreams streams(7);
  RandomStream first = streams.stream("arrivals");
  const std::uint64_t v1 = first.next_u64();
  RandomStream other = streams.stream("lengths");
  other.next_u64();
  EXPECT_EQ(streams.stream("arrivals").next_u64(), v1);
}

TEST(RandomStreams, DifferentNamesOrSeedsGiveDifferentSequences) {
  auto first_values = [](RandomStream s) {
    std::vector<std::uint64_t> v;
    for (int i = 0; i < 8; ++i) v.push_back(s.next_u64());
    return v;
  };
  RandomStreams streams(7);
  const auto arrivals = first_values(streams.stream("arrivals"));
  EXPECT_NE(arrivals, first_values(streams.stream("lengths")));
  EXPECT_NE(arrivals, first_values(streams.stream("arrivals2")));
  EXPECT_NE(arrivals, first_values(streams.stream("")));
  EXPECT_NE(arrivals, first_values(RandomStreams(8).stream("arrivals")));
}

TEST(RandomStream, Uniform01IsInRangeWithUniformMoments) {
  RandomStream r(1);
  double lo = 1;
  double hi = 0;
  const auto [mean, var] = moments(kDraws, [&] {
    const double u = r.uniform01();
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    return u;
  });
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(mean, 0.5, 0.005);
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
}

TEST(RandomStream, UniformRespectsBounds) {
  RandomStream r(2);
  const auto [mean, var] = moments(kDraws, [&] {
    const double u = r.uniform(-3, 5);
    EXPECT_GE(u, -3);
    EXPECT_LT(u, 5);
    return u;
  });
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(var, 64.0 / 12, 0.1);
}

TEST(RandomStream, BelowStaysInRangeAndHitsEveryValueEvenly) {
  RandomStream r(3);
  constexpr std::uint64_t n = 10;
  std::vector<int> counts(n, 0);
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t v = r.below(n);
    ASSERT_LT(v, n);
    ++counts[v];
  }
  // Chi-square with 9 degrees of freedom; 27.9 is its 0.999 quantile.
  const double expected = static_cast<double>(kDraws) / n;
  double chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 27.9);

  for (int i = 0; i < 100; ++i) EXPECT_EQ(r.below(1), 0u);
  const std::uint64_t big = (std::uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 100; ++i) EXPECT_LT(r.below(big), big);
}

TEST(RandomStream, ExponentialHasMeanAndVarianceOfItsRate) {
  RandomStream r(4);
  const double rate = 4.0;
  const auto [mean, var] = moments(kDraws, [&] {
    const double x = r.exponential(rate);
    EXPECT_GE(x, 0.0);
    return x;
  });
  EXPECT_NEAR(mean, 1 / rate, 0.005 / rate * 5);
  EXPECT_NEAR(var, 1 / (rate * rate), 0.03 / (rate * rate));
}

TEST(RandomStream, NormalHasItsMeanAndStddev) {
  RandomStream r(5);
  const auto [mean, var] = moments(kDraws, [&] { return r.normal(10.0, 2.0); });
  EXPECT_NEAR(mean, 10.0, 0.02);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.02);
}

TEST(RandomStream, GammaHasMeanShapeTimesScale) {
  struct Case {
    double shape;
    double scale;
  };
  // Shape below 1 takes the boosted path; the others the Marsaglia-Tsang loop directly.
  for (const Case c : {Case{0.5, 2.0}, Case{1.0, 1.0}, Case{4.0, 0.25}, Case{20.0, 3.0}}) {
    RandomStream r(6);
    const auto [mean, var] = moments(kDraws, [&] {
      const double x = r.gamma(c.shape, c.scale);
      EXPECT_GT(x, 0.0);
      return x;
    });
    const double want_mean = c.shape * c.scale;
    const double want_var = c.shape * c.scale * c.scale;
    EXPECT_NEAR(mean, want_mean, 5 * std::sqrt(want_var / kDraws)) << c.shape;
    EXPECT_NEAR(var, want_var, 0.05 * want_var) << c.shape;
  }
}

TEST(RandomStream, SamplersAreDeterministic) {
  RandomStream a(99);
  RandomStream b(99);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(a.gamma(0.7, 1.5), b.gamma(0.7, 1.5));
    ASSERT_EQ(a.normal(0, 1), b.normal(0, 1));
    ASSERT_EQ(a.exponential(2), b.exponential(2));
  }
}

}  // namespace
}  // namespace tessera::core
