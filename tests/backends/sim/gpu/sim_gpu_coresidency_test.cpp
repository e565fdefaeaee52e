// Co-residency worked out by hand on the test GPU (16 SMs; a block of 1e6 FP32 FLOPs takes 1 us
// alone on an SM, one of 4e6 tensor FLOPs too; 1600 bytes/ns of DRAM bandwidth) with every
// efficiency at 1 and no launch overhead. Two contexts on all 16 SMs, as two MPS clients: A's
// kernel is submitted first, B's right after, both at time 0.

#include <gtest/gtest.h>

#include <functional>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::sequence_of;

constexpr core::Nanos kUs = core::kNanosPerMicro;

workload::Kernel on_tensor(workload::Kernel k) {
  k.pipe = workload::ComputePipe::kTensorFp16;
  return k;
}

struct PairResult {
  test::Recorded a;
  test::Recorded b;
  double sm_busy;
};

class CoResidency : public ::testing::TestWithParam<bool> {  // parameter: exact batching on
 protected:
  hw::GpuSpec spec = test::TestGpu().build();
  SimGpuOptions options = test::exact_options(GetParam());

  // A on every SM, B on `b_sms`; `meanwhile` may schedule more before the run.
  PairResult run_pair(const workload::Kernel& a, const workload::Kernel& b,
                      const device::StreamConfig& b_sms = test::on_sms(0, 16, 2),
                      const std::function<void(Engine&, SimGpu&)>& meanwhile = {}) {
    Engine engine;
    SimGpu gpu(engine, spec, options);
    test::EventLog log;
    gpu.add_observer(&log);
    const auto sa = *gpu.create_stream(test::on_sms(0, 16, 1));
    const auto sb = *gpu.create_stream(b_sms);
    EXPECT_TRUE(gpu.submit(sa, sequence_of({a}), 0, nullptr));
    EXPECT_TRUE(gpu.submit(sb, sequence_of({b}), 0, nullptr));
    if (meanwhile) meanwhile(engine, gpu);
    engine.run_until(core::kNever);
    EXPECT_EQ(log.events.size(), 2u);
    const auto ea = log.of_stream(sa);
    const auto eb = log.of_stream(sb);
    if (ea.size() != 1 || eb.size() != 1) return {};
    return {.a = ea[0], .b = eb[0], .sm_busy = gpu.stats().sm_busy_fraction};
  }
};

TEST_P(CoResidency, KernelsOnDifferentPipesShareSmsAtFullRate) {
  // One 1024-thread block per SM from each: two fit on an SM of 2048 threads. A's FP32 blocks
  // take 10 us, B's tensor blocks 10 us; side by side neither slows the other.
  const auto r =
      run_pair(make_kernel("fp32", 16, 1e7, 0, 2), on_tensor(make_kernel("tensor", 16, 4e7, 0, 2)));
  EXPECT_EQ(r.a.start, 0);
  EXPECT_EQ(r.a.end, 10 * kUs);
  EXPECT_EQ(r.b.start, 0);
  EXPECT_EQ(r.b.end, 10 * kUs);
  EXPECT_EQ(r.b.sms, 16);
  // Each holds all 16 SMs and counts half of them: the SMs were busy, and not twice over.
  EXPECT_DOUBLE_EQ(r.sm_busy, 1.0);
}

TEST_P(CoResidency, KernelsOnOnePipeShareItsRate) {
  // Both compute-bound on the FP32 pipe: each gets half of it, so both end when the pair would
  // have ended back to back.
  const auto r =
      run_pair(make_kernel("first", 16, 1e7, 0, 2), make_kernel("second", 16, 1e7, 0, 2));
  EXPECT_EQ(r.a.end, 20 * kUs);
  EXPECT_EQ(r.b.start, 0);
  EXPECT_EQ(r.b.end, 20 * kUs);
  EXPECT_DOUBLE_EQ(r.sm_busy, 1.0);
}

TEST_P(CoResidency, AMemoryBoundKernelLeavesThePipeToItsNeighbour) {
  // B computes nothing: its 16 x 1e6 bytes stream at 1600 bytes/ns in 10 us while A computes
  // for 10 us beside it.
  const auto r =
      run_pair(make_kernel("compute", 16, 1e7, 0, 2), make_kernel("stream", 16, 0, 1e6, 2));
  EXPECT_EQ(r.a.end, 10 * kUs);
  EXPECT_EQ(r.b.start, 0);
  EXPECT_EQ(r.b.end, 10 * kUs);
}

TEST_P(CoResidency, AClockChangeResharesThePipe) {
  // A computes for 10 us at boost; B computes for 5 us under 10 us of streaming (16 x 1e6 bytes
  // at 1600 bytes/ns), so it asks for half the pipe and A is left the other half. At 4 us the
  // clock halves: B's compute now fills its 10 us and both ask for the whole pipe, half each.
  // Up to 4 us A does 4 x 0.5 / 10 = 0.2 and B 0.4; then A runs at 0.5 / 20 us and B at
  // 0.5 / 10 us, so B ends after 0.6 / 0.05 = 12 us, at 16 us, with A at 0.5 left, which alone
  // at 1 / 20 us takes 10 us more.
  const auto r =
      run_pair(make_kernel("compute", 16, 1e7, 0, 2), make_kernel("mixed", 16, 5e6, 1e6, 2),
               test::on_sms(0, 16, 2), [](Engine& engine, SimGpu& gpu) {
                 engine.schedule_at(4 * kUs, [&gpu] { ASSERT_TRUE(gpu.set_clock_mhz(500)); });
               });
  EXPECT_EQ(r.b.end, 16 * kUs);
  EXPECT_EQ(r.a.end, 26 * kUs);
}

TEST_P(CoResidency, AFullSmTakesNoOtherBlocksUntilItsLastWave) {
  // A: 40 blocks of 1 us that each fill an SM: waves of 16, 16 and 8, 3 us. Its last wave
  // starts at 2 us on SMs 0-7 and gives back SMs 8-15, where B's 8 blocks run from 2 to 3 us.
  const auto r = run_pair(make_kernel("full", 40, 1e6, 0, 1), make_kernel("small", 8, 1e6, 0, 1));
  EXPECT_EQ(r.a.end, 3 * kUs);
  EXPECT_EQ(r.b.start, 2 * kUs);
  EXPECT_EQ(r.b.end, 3 * kUs);
  EXPECT_EQ(r.b.sms, 8);
  // 16 SMs for 2 us and 8 + 8 for 1 us: busy throughout.
  EXPECT_DOUBLE_EQ(r.sm_busy, 1.0);
}

TEST_P(CoResidency, OffEveryKernelWaitsForFreeSmsAsInTheFirstOrderModel) {
  options.co_residency = false;
  const auto pipes =
      run_pair(make_kernel("fp32", 16, 1e7, 0, 2), on_tensor(make_kernel("tensor", 16, 4e7, 0, 2)));
  EXPECT_EQ(pipes.a.end, 10 * kUs);
  EXPECT_EQ(pipes.b.start, 10 * kUs);
  EXPECT_EQ(pipes.b.end, 20 * kUs);
  // No tail either: A holds all 16 SMs to its end.
  const auto tail =
      run_pair(make_kernel("full", 40, 1e6, 0, 1), make_kernel("small", 8, 1e6, 0, 1));
  EXPECT_EQ(tail.b.start, 3 * kUs);
  EXPECT_EQ(tail.b.end, 4 * kUs);
  EXPECT_DOUBLE_EQ(tail.sm_busy, (16.0 * 3 + 8) / (16 * 4));
}

TEST_P(CoResidency, AStreamMaskStillBoundsWhereBlocksGo) {
  // B is confined to SMs 8-15, where A has room beside its blocks: B co-resides there only.
  const auto r = run_pair(make_kernel("a", 16, 1e7, 0, 2),
                          on_tensor(make_kernel("b", 16, 4e7, 0, 2)), test::on_sms(8, 16, 2));
  // 16 blocks on 8 SMs: two 10 us blocks on each, 20 us.
  EXPECT_EQ(r.b.sms, 8);
  EXPECT_EQ(r.b.start, 0);
  EXPECT_EQ(r.b.end, 20 * kUs);
}

INSTANTIATE_TEST_SUITE_P(Batching, CoResidency, ::testing::Bool());

}  // namespace
}  // namespace tessera::sim
