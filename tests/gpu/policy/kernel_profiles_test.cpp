#include "tessera/gpu/policy/kernel_profiles.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "support/test_gpu.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

std::vector<LatencySample> curve(double m, double b, std::initializer_list<int> tpcs) {
  std::vector<LatencySample> out;
  for (int t : tpcs) out.push_back({.tpcs = t, .latency_ns = m / t + b});
  return out;
}

TEST(FitScaling, RecoversAnExactCurve) {
  const auto samples = curve(8000, 500, {1, 2, 3, 4, 8, 16});
  const auto fit = fit_scaling(samples);
  ASSERT_TRUE(fit) << fit.error().message();
  EXPECT_NEAR(fit->m_ns, 8000, 1e-6);
  EXPECT_NEAR(fit->b_ns, 500, 1e-6);
  EXPECT_NEAR(fit->predict_ns(5), 8000.0 / 5 + 500, 1e-6);
}

TEST(FitScaling, TwoCountsDetermineTheCurve) {
  const auto fit = fit_scaling(curve(1200, 30, {3, 7}));
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->m_ns, 1200, 1e-9);
  EXPECT_NEAR(fit->b_ns, 30, 1e-9);
}

TEST(FitScaling, ClampsANegativeInterceptAndRefitsTheSlope) {
  // l = 1000/t - 50 would predict negative latency beyond t = 20.
  const auto samples = curve(1000, -50, {1, 2, 4, 8});
  const auto fit = fit_scaling(samples);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->b_ns, 0);
  // Least squares through the origin: m = sum(x y) / sum(x^2), x = 1/t.
  double xy = 0;
  double xx = 0;
  for (const auto& s : samples) {
    xy += s.latency_ns / s.tpcs;
    xx += 1.0 / (s.tpcs * s.tpcs);
  }
  EXPECT_NEAR(fit->m_ns, xy / xx, 1e-9);
  EXPECT_GT(fit->predict_ns(1000), 0);
}

TEST(FitScaling, ClampsANegativeSlopeToAFlatCurve) {
  // Latency that grows with TPCs (noise, or contention) must not predict speed-ups from fewer.
  const std::vector<LatencySample> samples{{.tpcs = 1, .latency_ns = 100},
                                           {.tpcs = 2, .latency_ns = 200}};
  const auto fit = fit_scaling(samples);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->m_ns, 0);
  EXPECT_DOUBLE_EQ(fit->b_ns, 150);
}

TEST(FitScaling, RejectsSamplesItCannotFit) {
  const auto one_count = curve(100, 1, {4, 4, 4});
  auto r = fit_scaling(one_count);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().domain(), core::Domain::kGpu);
  EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("two or more distinct TPC counts"));

  EXPECT_FALSE(fit_scaling(std::vector<LatencySample>{}));
  const std::vector<LatencySample> zero_tpcs{{.tpcs = 0, .latency_ns = 1},
                                             {.tpcs = 2, .latency_ns = 1}};
  r = fit_scaling(zero_tpcs);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("0 TPCs"));
  const std::vector<LatencySample> negative{{.tpcs = 1, .latency_ns = -1},
                                            {.tpcs = 2, .latency_ns = 1}};
  EXPECT_FALSE(fit_scaling(negative));
  const std::vector<LatencySample> nan{{.tpcs = 1, .latency_ns = std::nan("")},
                                       {.tpcs = 2, .latency_ns = 1}};
  EXPECT_FALSE(fit_scaling(nan));
}

TEST(RightSize, FewestTpcsWithinTheSlip) {
  const ScalingFit pure{.m_ns = 1000, .b_ns = 0};
  EXPECT_EQ(right_size(pure, 10, 0), 10);    // perfect scaling: every TPC counts
  EXPECT_EQ(right_size(pure, 10, 1.0), 5);   // 1000/5 = 200 = 2 x 100, the bound itself
  EXPECT_EQ(right_size(pure, 10, 0.99), 6);  // 200 > 199: one more TPC
  const ScalingFit flat{.m_ns = 0, .b_ns = 40};
  EXPECT_EQ(right_size(flat, 66, 0), 1);  // nothing to gain from TPCs
  // 1000/t + 100 <= 1.1 * (1000/10 + 100) = 220  <=>  t >= 8.33.
  const ScalingFit mixed{.m_ns = 1000, .b_ns = 100};
  EXPECT_EQ(right_size(mixed, 10, 0.1), 9);
}

TEST(RightSize, DegenerateArguments) {
  const ScalingFit pure{.m_ns = 1000, .b_ns = 0};
  EXPECT_EQ(right_size(pure, 0, 0.1), 1);
  EXPECT_EQ(right_size(pure, 1, 0.5), 1);
  EXPECT_EQ(right_size(pure, 10, -0.5), 10);  // a negative slip is no slip
}

TEST(HeldOutError, ExactCurveHasNoError) {
  const auto samples = curve(5000, 200, {1, 2, 4, 8, 3, 6, 12});
  const std::vector<int> fit_on{1, 2, 4, 8};
  const auto e = held_out_error(samples, fit_on);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->points, 3);
  EXPECT_NEAR(e->mean_abs_pct, 0, 1e-9);
  EXPECT_NEAR(e->max_abs_pct, 0, 1e-9);
}

TEST(HeldOutError, NoisyCurveErrorIsMeasuredOnUnseenCountsOnly) {
  // +-3% alternating noise around 5000/t + 200; the held-out counts carry +6% so their error
  // stands apart from the in-sample noise.
  std::vector<LatencySample> samples;
  for (int t : {1, 2, 4, 8, 16}) {
    const double noise = (t % 4 == 0) ? 1.03 : 0.97;
    samples.push_back({.tpcs = t, .latency_ns = (5000.0 / t + 200) * noise});
  }
  for (int t : {3, 6, 12}) samples.push_back({.tpcs = t, .latency_ns = (5000.0 / t + 200) * 1.06});
  const std::vector<int> fit_on{1, 2, 4, 8, 16};
  const auto e = held_out_error(samples, fit_on);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->points, 3);
  EXPECT_GT(e->mean_abs_pct, 2.0);
  EXPECT_LT(e->mean_abs_pct, 12.0);
  EXPECT_GE(e->max_abs_pct, e->mean_abs_pct);

  // The same data fitted on everything: the held-out set is empty, which is an error, not 0%.
  const std::vector<int> all{1, 2, 3, 4, 6, 8, 12, 16};
  const auto none = held_out_error(samples, all);
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message(), HasSubstr("hold out"));
  // Fitting on one count cannot work.
  const std::vector<int> one{4};
  const auto bad = held_out_error(samples, one);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("held-out error"));
}

// 16 SMs in 8 TPCs; 256-thread blocks with 64 registers fit 4 per SM (65536 / (64 x 256)), so a
// wave on t TPCs is 8t blocks.
workload::Kernel gemm(double flops = 1e6) {
  workload::Kernel k;
  k.name = "gemm";
  k.blocks = 256;
  k.block = {.threads = 256, .registers_per_thread = 64, .shared_memory_bytes = 0};
  k.flops_per_block = flops;
  return k;
}

TEST(KernelProfiles, AtomsAreScaledToTheWholeGridByWaves) {
  const auto spec = test::TestGpu().sms(16).build();
  KernelProfiles p;
  const auto k = gemm();
  // 32 blocks on 2 TPCs (16 per wave) are 2 waves; the grid is 16: 8x the time.
  p.record(spec, k, 32, 2, spec.boost_clock_mhz, 1000);
  const auto s = p.samples(k);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].tpcs, 2);
  EXPECT_DOUBLE_EQ(s[0].latency_ns, 8000);
  EXPECT_FALSE(p.fit(k));
  // One TPC count seen: predictions scale it by waves.
  EXPECT_EQ(p.predict(spec, k, 256, 2), 8000);
  EXPECT_EQ(p.predict(spec, k, 256, 4), 4000);  // 8 waves instead of 16
  EXPECT_EQ(p.predict(spec, k, 32, 4), 500);    // one wave
  EXPECT_EQ(p.predict(spec, k, 33, 4), 1000);   // a 33rd block needs a second wave
}

TEST(KernelProfiles, PredictsFromTheFitOnceTwoCountsAreSeen) {
  const auto spec = test::TestGpu().sms(16).build();
  KernelProfiles p;
  const auto k = gemm();
  p.record(spec, k, 256, 2, spec.boost_clock_mhz, 8000);
  p.record(spec, k, 256, 4, spec.boost_clock_mhz, 4900);
  p.record(spec, k, 256, 4, spec.boost_clock_mhz, 5100);  // the mean at 4 TPCs is 5000
  const auto fit = p.fit(k);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->m_ns, 12000, 1e-6);  // m/2 - m/4 = 3000
  EXPECT_NEAR(fit->b_ns, 2000, 1e-6);
  EXPECT_EQ(p.predict(spec, k, 256, 8), 3500);
  EXPECT_EQ(p.predict(spec, k, 128, 8), 1750);  // 2 of the grid's 4 waves on 8 TPCs
}

TEST(KernelProfiles, KeepsOtherClocksApartAndIgnoresUnusableRuns) {
  const auto spec = test::TestGpu().sms(16).build();
  KernelProfiles p;
  const auto k = gemm();
  EXPECT_FALSE(p.predict(spec, k, 256, 8));  // never seen
  p.record(spec, k, 256, 8, 700, 3000);
  p.record(spec, k, 128, 8, 700.2, 1600);  // half the grid: 2 of 4 waves, 3200 whole
  p.record(spec, k, 256, 8, 600, 4000);
  EXPECT_EQ(p.kernels(), 1u);
  EXPECT_TRUE(p.samples(k).empty());
  EXPECT_FALSE(p.predict(spec, k, 256, 8));  // only seen below boost
  const auto clocks = p.clock_samples(k);
  ASSERT_EQ(clocks.size(), 2u);  // per clock, ascending; 700.2 MHz counts as 700
  EXPECT_EQ(clocks[0].clock_mhz, 600);
  EXPECT_EQ(clocks[0].latency_ns, 4000);
  EXPECT_EQ(clocks[1].clock_mhz, 700);
  EXPECT_EQ(clocks[1].latency_ns, 3100);

  auto huge = gemm();
  huge.name = "huge";
  huge.block.threads = 4096;  // does not fit on an SM
  p.record(spec, huge, 256, 8, spec.boost_clock_mhz, 10);
  p.record(spec, k, 0, 8, spec.boost_clock_mhz, 10);    // no blocks
  p.record(spec, k, 512, 8, spec.boost_clock_mhz, 10);  // more blocks than the grid
  p.record(spec, k, 256, 0, spec.boost_clock_mhz, 10);  // no TPCs
  p.record(spec, k, 256, 8, spec.boost_clock_mhz, -1);  // negative latency
  EXPECT_EQ(p.kernels(), 1u);
  EXPECT_TRUE(p.samples(k).empty());
}

TEST(KernelProfiles, KernelsDifferingInWorkAreLearnedApart) {
  const auto spec = test::TestGpu().sms(16).build();
  KernelProfiles p;
  p.record(spec, gemm(1e6), 256, 8, spec.boost_clock_mhz, 1000);
  p.record(spec, gemm(2e6), 256, 8, spec.boost_clock_mhz, 2000);
  EXPECT_EQ(p.kernels(), 2u);
  EXPECT_EQ(p.predict(spec, gemm(1e6), 256, 8), 1000);
  EXPECT_EQ(p.predict(spec, gemm(2e6), 256, 8), 2000);
  EXPECT_EQ(key_of(gemm(1e6)), key_of(gemm(1e6)));
  EXPECT_NE(key_of(gemm(1e6)), key_of(gemm(2e6)));
  EXPECT_LT(key_of(gemm(1e6)), key_of(gemm(2e6)));
}

}  // namespace
}  // namespace tessera::gpu
