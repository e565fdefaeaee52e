#include "tessera/gpu/policy/dvfs_governor.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/test_gpu.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

// The test GPU: 500..1000 MHz, so 15 MHz steps give 505, 520, ..., 985, 1000.
std::vector<double> clocks() {
  return candidate_clocks(test::TestGpu().build());
}

KernelKey key(int i) {
  return KernelKey{.name = fmt::format("k{}", i), .blocks = 64};
}

// Latency of a kernel of sensitivity s at clock f under the governor's model.
double latency_at(double l_max, double s, double f, double f_max = 1000) {
  return l_max * (1 + s * (f_max / f - 1));
}

TEST(CandidateClocks, StepFromBoostDownToTheMinimum) {
  const auto c = clocks();
  ASSERT_EQ(c.size(), 34u);  // 1000 - 15k >= 500 for k = 0..33
  EXPECT_EQ(c.front(), 505);
  EXPECT_EQ(c.back(), 1000);
  for (std::size_t i = 1; i < c.size(); ++i) EXPECT_DOUBLE_EQ(c[i] - c[i - 1], 15);
  const auto only_boost = candidate_clocks(test::TestGpu().build(), 0);
  ASSERT_EQ(only_boost.size(), 1u);
  EXPECT_EQ(only_boost[0], 1000);
}

TEST(DvfsGovernor, UnknownKernelsKeepTheBoostClock) {
  DvfsGovernor g(clocks(), 0.1);
  EXPECT_EQ(g.choose_clock_mhz(), 1000);  // nothing seen
  EXPECT_FALSE(g.probe_clock_mhz());
  g.observe(key(0), 1000, 5000);
  EXPECT_FALSE(g.knows(key(0)));
  EXPECT_EQ(g.sensitivity(key(0)), 1);
  EXPECT_EQ(g.choose_clock_mhz(), 1000);  // seen at one clock only: no sensitivity yet
}

TEST(DvfsGovernor, LearnsSensitivityFromTwoClocks) {
  DvfsGovernor g(clocks(), 0.1);
  for (double s : {0.0, 0.3, 1.0}) {
    const auto k = key(static_cast<int>(s * 10));
    g.observe(k, 1000, 4000);
    g.observe(k, 700, static_cast<core::Nanos>(latency_at(4000, s, 700)));
    EXPECT_TRUE(g.knows(k));
    EXPECT_NEAR(g.sensitivity(k), s, 1e-3);
  }
}

TEST(DvfsGovernor, SensitivityIsClampedToTheModelsRange) {
  DvfsGovernor g(clocks(), 0.1);
  g.observe(key(1), 1000, 1000);
  g.observe(key(1), 500, 3000);  // slower than 1/f: not in the model, counts as compute bound
  EXPECT_EQ(g.sensitivity(key(1)), 1);
  g.observe(key(2), 1000, 1000);
  g.observe(key(2), 500, 900);  // faster at a lower clock: noise, counts as memory bound
  EXPECT_EQ(g.sensitivity(key(2)), 0);
}

TEST(DvfsGovernor, MemoryBoundStreamsGetLowerClocksThanComputeBoundOnes) {
  DvfsGovernor memory(clocks(), 0.1);
  DvfsGovernor compute(clocks(), 0.1);
  memory.observe(key(0), 1000, 1000);
  memory.observe(key(0), 700, 1000);
  compute.observe(key(0), 1000, 1000);
  compute.observe(key(0), 500, 2000);
  EXPECT_EQ(memory.choose_clock_mhz(), 505);  // s = 0: the clock costs nothing
  // s = 1: 1000/f - 1 <= 0.1 first holds at 910 (1000/910 = 1.0989).
  EXPECT_EQ(compute.choose_clock_mhz(), 910);
  EXPECT_NEAR(compute.predicted_slowdown(910), 1000.0 / 910, 1e-9);
  EXPECT_DOUBLE_EQ(compute.predicted_slowdown(1000), 1);
  EXPECT_LT(memory.choose_clock_mhz(), compute.choose_clock_mhz());
}

TEST(DvfsGovernor, ZeroSlipKeepsBoostUnlessNothingIsSensitive) {
  DvfsGovernor g(clocks(), 0);
  g.observe(key(0), 1000, 1000);
  g.observe(key(0), 500, 1100);  // s = 0.1
  EXPECT_EQ(g.choose_clock_mhz(), 1000);
  DvfsGovernor flat(clocks(), 0);
  flat.observe(key(0), 1000, 1000);
  flat.observe(key(0), 500, 1000);
  EXPECT_EQ(flat.choose_clock_mhz(), 505);
}

// Synthetic streams of kernels with known sensitivities and runtimes: the chosen clock never
// makes the stream slower than the slip allows, and the next lower candidate would.
TEST(DvfsGovernor, NeverExceedsTheSlipAndChoosesTheLowestClockWithinIt) {
  std::mt19937_64 rng(20260611);  // fixed seed: the same streams every run
  std::uniform_real_distribution<double> unit(0, 1);
  const auto cands = clocks();
  for (int trial = 0; trial < 200; ++trial) {
    const double slip = 0.2 * unit(rng);
    DvfsGovernor g(cands, slip);
    const int n = 1 + static_cast<int>(unit(rng) * 6);
    std::vector<double> s(n);
    std::vector<double> share(n);  // the runtime the governor saw of each kernel
    for (int i = 0; i < n; ++i) {
      s[i] = unit(rng) < 0.2 ? 1.0 : unit(rng);
      const double l_max = 1000 + 100000 * unit(rng);
      const double low = cands[static_cast<std::size_t>(unit(rng) * (cands.size() - 1))];
      const auto at_max = static_cast<core::Nanos>(l_max);
      const auto at_low = static_cast<core::Nanos>(latency_at(l_max, s[i], low));
      g.observe(key(i), 1000, at_max);
      g.observe(key(i), low, at_low);
      share[i] = static_cast<double>(at_max + at_low);
    }
    const auto true_slowdown = [&](double f) {
      double base = 0;
      double stretched = 0;
      for (int i = 0; i < n; ++i) {
        base += share[i];
        stretched += share[i] * (1 + s[i] * (1000 / f - 1));
      }
      return stretched / base;
    };
    const double chosen = g.choose_clock_mhz();
    // Latencies are whole nanoseconds, so learned sensitivities carry ~1e-5 rounding.
    EXPECT_LE(true_slowdown(chosen), 1 + slip + 1e-4) << "trial " << trial;
    const auto it = std::find(cands.begin(), cands.end(), chosen);
    ASSERT_NE(it, cands.end());
    if (it != cands.begin()) {
      EXPECT_GT(true_slowdown(*(it - 1)), 1 + slip - 1e-4) << "trial " << trial;
    }
  }
}

TEST(DvfsGovernor, UnknownKernelsCountAsComputeBound) {
  DvfsGovernor g(clocks(), 0.1);
  g.observe(key(0), 1000, 1000);  // memory bound, known
  g.observe(key(0), 505, 1000);
  EXPECT_EQ(g.choose_clock_mhz(), 505);
  g.observe(key(1), 1000, 2000);  // unknown, half the runtime seen: taken as s = 1
  // Slowdown with x = 1000/f - 1: (2000 + 2000 (1 + x)) / 4000 = 1 + x/2 <= 1.1  =>  x <= 0.2.
  const double chosen = g.choose_clock_mhz();
  EXPECT_LE(g.predicted_slowdown(chosen), 1.1);
  EXPECT_EQ(chosen, 835);  // 1000/835 - 1 = 0.1976; 820 gives 0.2195
}

TEST(DvfsGovernor, ProbingEndsOnceEveryKernelHasTwoClocks) {
  DvfsGovernor g(clocks(), 0.1);
  const std::vector<double> true_s{0.1, 0.5, 0.9};
  for (int i = 0; i < 3; ++i) g.observe(key(i), 1000, 1000 * (i + 1));
  // A caller that probes, runs every kernel at the probe clock and reports it.
  int probes = 0;
  while (const auto probe = g.probe_clock_mhz()) {
    ASSERT_LT(++probes, 10) << "probing did not converge";
    EXPECT_EQ(*probe, 910);  // the lowest clock where even s = 1 stays within 10%
    for (int i = 0; i < 3; ++i) {
      g.observe(key(i), *probe,
                static_cast<core::Nanos>(latency_at(1000 * (i + 1), true_s[i], *probe)));
    }
  }
  EXPECT_EQ(probes, 1);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g.sensitivity(key(i)), true_s[i], 0.01);
}

TEST(DvfsGovernor, ProbeGoesToBoostForKernelsSeenOnlyBelowIt) {
  DvfsGovernor g(clocks(), 0.1);
  g.observe(key(0), 700, 1000);
  ASSERT_TRUE(g.probe_clock_mhz());
  EXPECT_EQ(*g.probe_clock_mhz(), 1000);
  g.observe(key(0), 1000, 800);
  EXPECT_FALSE(g.probe_clock_mhz());
}

TEST(DvfsGovernor, NoProbeWhenTheSlipIsTooSmallForAnyLowerClock) {
  DvfsGovernor g(clocks(), 0.001);  // 985 MHz would cost up to 1.5%
  g.observe(key(0), 1000, 1000);
  EXPECT_FALSE(g.probe_clock_mhz());
  EXPECT_EQ(g.choose_clock_mhz(), 1000);
}

TEST(DvfsGovernor, ProbesTheLargestShareFirst) {
  DvfsGovernor g(clocks(), 0.1);
  g.observe(key(0), 1000, 100);
  g.observe(key(1), 700, 5000);  // larger share, seen only below boost
  EXPECT_EQ(g.probe_clock_mhz(), 1000);
  g.observe(key(0), 1000, 10000);  // now key 0 has the larger share
  EXPECT_EQ(g.probe_clock_mhz(), 910);
}

TEST(DvfsGovernor, MakeRejectsInputItCannotUse) {
  auto r = DvfsGovernor::make({}, 0.1);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("candidate clock"));
  r = DvfsGovernor::make({-1, std::nan("")}, 0.1);
  EXPECT_FALSE(r);
  r = DvfsGovernor::make(clocks(), -0.1);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("slip"));
  r = DvfsGovernor::make({1000, 500, 1000}, 0.1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->clocks_mhz(), (std::vector<double>{500, 1000}));
  EXPECT_EQ(r->max_clock_mhz(), 1000);
  DvfsGovernor empty({}, 0.1);
  EXPECT_EQ(empty.choose_clock_mhz(), 0);
  EXPECT_FALSE(empty.probe_clock_mhz());
}

TEST(DvfsGovernor, LooksUpKernelsAsTheirKeys) {
  workload::Kernel k;
  k.name = "a_kernel_name_longer_than_the_small_string_buffer";
  k.blocks = 64;
  k.flops_per_block = 1e6;
  DvfsGovernor g(clocks(), 0.1);
  g.observe(key_of(k), 1000, 1000);
  g.observe(key_of(k), 500, 1500);  // s = 0.5
  EXPECT_NEAR(g.sensitivity(k), 0.5, 1e-9);
  EXPECT_EQ(g.sensitivity(k), g.sensitivity(key_of(k)));
  workload::Kernel other = k;
  other.flops_per_block = 2e6;
  EXPECT_EQ(g.sensitivity(other), 1);  // a different kernel is unknown
  // The kernel-aware ordering agrees with the key's own.
  const KernelKeyLess less;
  EXPECT_EQ(less(key_of(k), other), key_of(k) < key_of(other));
  EXPECT_EQ(less(other, key_of(k)), key_of(other) < key_of(k));
  EXPECT_FALSE(less(key_of(k), k));
  EXPECT_FALSE(less(k, key_of(k)));
}

}  // namespace
}  // namespace tessera::gpu
