// Model sanity: the simulated GPU shows the first-order effects it exists for. All on the test
// GPU (16 SMs; a block of 1e6 FLOPs takes 1 us alone on an SM; 1600 bytes/ns of DRAM bandwidth,
// at most 200 bytes/ns per SM) with every efficiency at 1 and no launch overhead.

#include <gtest/gtest.h>

#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::run_alone;
using test::sequence_of;

constexpr core::Nanos kUs = core::kNanosPerMicro;

class Model : public ::testing::TestWithParam<bool> {  // parameter: exact batching on
 protected:
  hw::GpuSpec spec = test::TestGpu().build();
  SimGpuOptions options = test::exact_options(GetParam());

  core::Nanos time_of(const workload::Kernel& k, const device::StreamConfig& config = {}) {
    return run_alone(spec, options, sequence_of({k}), config);
  }
};

TEST_P(Model, WaveQuantizationIsAStaircaseWithStepsAtMultiplesOfAWave) {
  // One block per SM: a wave is 16 blocks, and time only steps when a wave overflows.
  for (int blocks = 1; blocks <= 48; ++blocks) {
    const core::Nanos expected = ((blocks + 15) / 16) * kUs;
    EXPECT_EQ(time_of(make_kernel("k", blocks, 1e6, 0)), expected) << blocks << " blocks";
  }
}

TEST_P(Model, AFullWaveOfResidentBlocksTakesBlocksPerSmBlockTimes) {
  // Four resident blocks share an SM: 64 blocks (one full wave on 16 SMs) take 4 us, the 65th
  // block adds a round on the busiest SM, and two full waves take twice one.
  EXPECT_EQ(time_of(make_kernel("k", 64, 1e6, 0, 4)), 4 * kUs);
  EXPECT_EQ(time_of(make_kernel("k", 65, 1e6, 0, 4)), 5 * kUs);
  EXPECT_EQ(time_of(make_kernel("k", 128, 1e6, 0, 4)), 8 * kUs);
  // A small grid is spread one block per SM, as the hardware's block scheduler does, so 8 blocks
  // on 8 of the 16 SMs take one block-time whatever the occupancy allows.
  EXPECT_EQ(time_of(make_kernel("k", 8, 1e6, 0, 4)), 1 * kUs);
}

TEST_P(Model, ComputeBoundTimeFallsAsOneOverSms) {
  const auto k = make_kernel("gemm", 1600, 1e6, 0);
  const core::Nanos t16 = time_of(k);
  EXPECT_EQ(t16, 100 * kUs);
  for (int sms : {1, 2, 4, 8}) {
    const device::StreamConfig on{.sms = device::SmMask::first(sms)};
    EXPECT_EQ(time_of(k, on) * sms, t16 * 16) << sms << " SMs";
  }
  // The cap limits SMs the same way a mask does.
  device::StreamConfig capped;
  capped.max_sms = 4;
  EXPECT_EQ(time_of(k, capped), 400 * kUs);
}

TEST_P(Model, BandwidthBoundTimeFlattensOnceSmsSaturateDram) {
  const auto k = make_kernel("copy", 1600, 0, 1e6);  // 1.6e9 bytes
  std::vector<core::Nanos> t;
  for (int sms : {1, 2, 4, 8, 12, 16}) t.push_back(time_of(k, {.sms = device::SmMask::first(sms)}));
  // 200 bytes/ns per SM until 8 SMs reach the device's 1600.
  EXPECT_EQ(t[0], 8'000 * kUs);
  EXPECT_EQ(t[1], 4'000 * kUs);
  EXPECT_EQ(t[2], 2'000 * kUs);
  EXPECT_EQ(t[3], 1'000 * kUs);
  EXPECT_EQ(t[4], 1'000 * kUs);
  EXPECT_EQ(t[5], 1'000 * kUs);
}

TEST_P(Model, RooflineTimeIsTheSlowerOfComputeAndMemoryPlusOverhead) {
  options.launch_overhead = 3 * kUs;
  // 16 blocks: compute 1 us; memory 16 x 2e5 bytes / 1600 = 2 us.
  EXPECT_EQ(time_of(make_kernel("k", 16, 1e6, 2e5)), 5 * kUs);
  EXPECT_EQ(time_of(make_kernel("k", 16, 4e6, 2e5)), 7 * kUs);
}

// Two tenants on disjoint halves of the SMs. Tenant B runs a memory-bound kernel; tenant A
// floods memory. In one bandwidth domain A halves B's bandwidth; in separate domains (each with
// half the bandwidth) B runs exactly as it does with A idle.
struct Interference {
  core::Nanos b_alone;
  core::Nanos b_with_flood;
};

Interference measure(const hw::GpuSpec& spec, const SimGpuOptions& options, bool separate) {
  const auto victim = sequence_of({make_kernel("victim", 800, 0, 1e6)});  // 0.8e9 bytes
  const auto flood = sequence_of({make_kernel("flood", 8000, 0, 1e6)});   // 8e9 bytes
  Interference out{};
  for (bool with_flood : {false, true}) {
    Engine engine;
    SimGpu gpu(engine, spec, options);
    device::DomainId da = device::kWholeDevice;
    device::DomainId db = device::kWholeDevice;
    if (separate) {
      da = *gpu.create_bandwidth_domain(0.5);
      db = *gpu.create_bandwidth_domain(0.5);
    }
    const auto a = *gpu.create_stream({.context = 1,
                                       .sms = device::SmMask::range(0, 8),
                                       .max_sms = 0,
                                       .bandwidth_domain = da,
                                       .priority = 0});
    const auto b = *gpu.create_stream({.context = 2,
                                       .sms = device::SmMask::range(8, 16),
                                       .max_sms = 0,
                                       .bandwidth_domain = db,
                                       .priority = 0});
    core::Nanos b_done = -1;
    if (with_flood) {
      EXPECT_TRUE(gpu.submit(a, flood, 0, nullptr));
    }
    EXPECT_TRUE(gpu.submit(b, victim, 0, [&](const auto& d) { b_done = d.finished; }));
    engine.run_until(core::kNever);
    (with_flood ? out.b_with_flood : out.b_alone) = b_done;
  }
  return out;
}

TEST_P(Model, AMemoryFloodSlowsATenantInTheSameDomain) {
  const auto r = measure(spec, options, /*separate=*/false);
  // Alone B's 8 SMs draw 1600 bytes/ns; with A also demanding 1600 each gets 800.
  EXPECT_EQ(r.b_alone, 500 * kUs);
  EXPECT_EQ(r.b_with_flood, 1000 * kUs);
}

TEST_P(Model, SeparateBandwidthDomainsIsolateTenants) {
  const auto r = measure(spec, options, /*separate=*/true);
  EXPECT_EQ(r.b_alone, 1000 * kUs);  // its domain holds half of 1600
  EXPECT_EQ(r.b_with_flood, r.b_alone);
}

TEST_P(Model, ContentionSplitsByMaxMinFairness) {
  // A light reader (4 SMs of a small-bandwidth kernel) keeps its full rate next to a flood that
  // takes the rest: 16 SMs in one domain, 1600 bytes/ns.
  Engine engine;
  SimGpu gpu(engine, spec, options);
  const auto a = *gpu.create_stream({.context = 1, .sms = device::SmMask::range(0, 12)});
  const auto b = *gpu.create_stream({.context = 2, .sms = device::SmMask::range(12, 16)});
  // B: 4 SMs, compute 100 us, memory 4e7 bytes -> demand 400 bytes/ns over 100 us.
  core::Nanos b_done = -1;
  core::Nanos a_done = -1;
  ASSERT_TRUE(gpu.submit(a, sequence_of({make_kernel("flood", 1200, 0, 1e6)}), 0,
                         [&](const auto& d) { a_done = d.finished; }));
  ASSERT_TRUE(gpu.submit(b, sequence_of({make_kernel("light", 400, 1e6, 1e5)}), 0,
                         [&](const auto& d) { b_done = d.finished; }));
  engine.run_until(core::kNever);
  EXPECT_EQ(b_done, 100 * kUs);
  // A (demand 1600) gets 1200 while B runs, then the whole 1600: 1.2e9 bytes in all.
  // 100 us at 1200 = 1.2e8 bytes; the remaining 1.08e9 at 1600 takes 675 us.
  EXPECT_EQ(a_done, 775 * kUs);
}

TEST_P(Model, LowerClockStretchesComputeButNotMemory) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  ASSERT_TRUE(gpu.set_clock_mhz(500));
  EXPECT_DOUBLE_EQ(gpu.clock_mhz(), 500);
  const auto s = *gpu.create_stream({});
  core::Nanos compute_done = -1;
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("gemm", 16, 1e6, 0)}), 0,
                         [&](const auto& d) { compute_done = d.finished; }));
  engine.run_until(core::kNever);
  EXPECT_EQ(compute_done, 2 * kUs);
  const core::Nanos t0 = engine.now();
  core::Nanos copy_done = -1;
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("copy", 16, 0, 1e5)}), 0,
                         [&](const auto& d) { copy_done = d.finished; }));
  engine.run_until(core::kNever);
  EXPECT_EQ(copy_done - t0, 1 * kUs);  // 1.6e6 bytes at 1600 bytes/ns
}

TEST_P(Model, ClockChangeMidKernelAppliesToTheWorkLeft) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  const auto s = *gpu.create_stream({});
  core::Nanos done = -1;
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("gemm", 160, 1e6, 0)}), 0,
                         [&](const auto& d) { done = d.finished; }));
  engine.schedule_at(5 * kUs, [&] { ASSERT_TRUE(gpu.set_clock_mhz(500)); });
  engine.run_until(core::kNever);
  EXPECT_EQ(done, 15 * kUs);  // 5 us of work done at 1000 MHz, the other half takes 10 us
}

TEST_P(Model, ClockOutsideTheRangeIsRejected) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  for (double mhz : {499.0, 1001.0, -1.0}) {
    const auto st = gpu.set_clock_mhz(mhz);
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message().find("500 to 1000 MHz"), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(gpu.clock_mhz(), 1000);
}

double energy_of_gemm_at(const hw::GpuSpec& spec, const SimGpuOptions& options, double mhz) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  EXPECT_TRUE(gpu.set_clock_mhz(mhz));
  const auto s = *gpu.create_stream({});
  EXPECT_TRUE(gpu.submit(s, sequence_of({make_kernel("gemm", 1600, 1e6, 0)}), 0, nullptr));
  engine.run_until(core::kNever);
  return gpu.stats().energy_joules;
}

TEST_P(Model, EnergyGrowsWithClockForTheSameKernel) {
  const double e500 = energy_of_gemm_at(spec, options, 500);
  const double e750 = energy_of_gemm_at(spec, options, 750);
  const double e1000 = energy_of_gemm_at(spec, options, 1000);
  EXPECT_LT(e500, e750);
  EXPECT_LT(e750, e1000);
  // At boost: 100 us at idle 100 W + 400 W x 0.7 (all SMs computing) = 380 W.
  EXPECT_NEAR(e1000, 380 * 100e-6, 1e-12);
  // At half clock: 200 us at 100 W + 400 W x 0.7 x 0.125 = 135 W.
  EXPECT_NEAR(e500, 135 * 200e-6, 1e-12);
}

TEST_P(Model, StatsIntegratePowerAndSmTimeExactly) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  const auto s = *gpu.create_stream({.sms = device::SmMask::first(8)});
  // 8 SMs: compute 10 us; memory 80 x 1e4 bytes / 1600 = 0.5 us, so compute-bound.
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("k", 80, 1e6, 1e4)}), 0, nullptr));
  engine.run_until(20 * kUs);  // 10 us busy, 10 us idle
  const auto st = gpu.stats();
  EXPECT_EQ(st.elapsed, 20 * kUs);
  EXPECT_EQ(st.kernels_completed, 1);
  EXPECT_DOUBLE_EQ(st.sm_busy_fraction, 8.0 * 10 / (16 * 20));
  // Busy: 100 + 400 x (0.7 x 0.5 + 0.3 x (8e5 / 10 us) / 1600) = 100 + 400 x 0.365 = 246 W.
  const double joules = (246 * 10e-6) + (100 * 10e-6);
  EXPECT_NEAR(st.energy_joules, joules, 1e-12);
  EXPECT_NEAR(st.average_power_watts, joules / 20e-6, 1e-6);
}

TEST_P(Model, StatsMidKernelIncludeTheOpenSegment) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("k", 160, 1e6, 0)}), 0, nullptr));
  engine.run_until(4 * kUs);
  const auto st = gpu.stats();
  EXPECT_EQ(st.kernels_completed, 0);
  EXPECT_DOUBLE_EQ(st.sm_busy_fraction, 1.0);
  EXPECT_NEAR(st.energy_joules, 380 * 4e-6, 1e-12);
}

TEST_P(Model, CarvingBandwidthSlowsKernelsLeftInTheWholeDeviceDomain) {
  Engine engine;
  SimGpu gpu(engine, spec, options);
  const auto s = *gpu.create_stream({});
  core::Nanos done = -1;
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("copy", 1600, 0, 1e6)}), 0,
                         [&](const auto& d) { done = d.finished; }));
  // After 500 us (half the bytes), a quarter of the bandwidth is carved away.
  engine.schedule_at(500 * kUs, [&] { ASSERT_TRUE(gpu.create_bandwidth_domain(0.25)); });
  engine.run_until(core::kNever);
  EXPECT_EQ(done, 500 * kUs + 666'667);  // 8e8 bytes left at 1200 bytes/ns, rounded up
}

INSTANTIATE_TEST_SUITE_P(PerKernelAndBatched, Model, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Batched" : "PerKernel"; });

}  // namespace
}  // namespace tessera::sim
