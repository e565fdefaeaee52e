// The host that launches a stream's kernels (SimGpuOptions::host_launch, graph_launch), worked
// out by hand on the test GPU (16 SMs; a block of 1e6 FP32 FLOPs takes 1 us alone on an SM) with
// every efficiency at 1 and no launch overhead on the GPU: each kernel below is 16 such blocks,
// 1 us on the whole GPU. Parameter: the exact fast path (batching) on, which must give the same
// times as the per-kernel path.

#include <gtest/gtest.h>

#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;

constexpr core::Nanos kUs = core::kNanosPerMicro;

workload::KernelSequencePtr four_kernels(bool graph) {
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->groups.push_back(workload::KernelGroup{
      .kernels = {make_kernel("a", 16, 1e6, 0), make_kernel("b", 16, 1e6, 0)}, .repeat = 2});
  seq->graph = graph;
  return seq;
}

class HostLaunch : public ::testing::TestWithParam<bool> {
 protected:
  hw::GpuSpec spec = test::TestGpu().build();
  SimGpuOptions options = test::exact_options(GetParam());
  Engine engine;
  std::unique_ptr<SimGpu> gpu;
  test::EventLog log;
  device::StreamId stream = 0;

  void make() {
    gpu = std::make_unique<SimGpu>(engine, spec, options);
    gpu->add_observer(&log);
    stream = *gpu->create_stream(test::on_sms(0, 16, 1));
  }

  std::vector<core::Nanos> starts() const {
    std::vector<core::Nanos> out;
    for (const auto& e : log.events) out.push_back(e.start);
    return out;
  }
};

TEST_P(HostLaunch, EagerKernelsStartWhenTheHostHasLaunchedThem) {
  // 3 us per launch, 1 us per kernel: the GPU idles 2 us before each kernel.
  options.host_launch = 3 * kUs;
  make();
  ASSERT_TRUE(gpu->submit(stream, four_kernels(false), 0, nullptr));
  engine.run_until(core::kNever);
  EXPECT_EQ(starts(), (std::vector<core::Nanos>{3 * kUs, 6 * kUs, 9 * kUs, 12 * kUs}));
  EXPECT_EQ(log.events.back().end, 13 * kUs);
}

TEST_P(HostLaunch, AGraphLaunchesEveryKernelAtOnce) {
  // One 5 us launch for the graph, then the kernels back to back; host_launch does not apply.
  options.host_launch = 3 * kUs;
  options.graph_launch = 5 * kUs;
  make();
  ASSERT_TRUE(gpu->submit(stream, four_kernels(true), 0, nullptr));
  engine.run_until(core::kNever);
  EXPECT_EQ(starts(), (std::vector<core::Nanos>{5 * kUs, 6 * kUs, 7 * kUs, 8 * kUs}));
}

TEST_P(HostLaunch, AHostAheadOfTheGpuLeavesNoGap) {
  // 0.5 us per launch: only the first kernel waits; the host is ahead from then on.
  options.host_launch = kUs / 2;
  make();
  ASSERT_TRUE(gpu->submit(stream, four_kernels(false), 0, nullptr));
  engine.run_until(core::kNever);
  EXPECT_EQ(starts(), (std::vector<core::Nanos>{kUs / 2, 3 * kUs / 2, 5 * kUs / 2, 7 * kUs / 2}));
}

TEST_P(HostLaunch, TheHostLaunchesSubmissionsInTheirOrder) {
  // Both submitted at 0: the second's launches begin when the first's four are done (12 us),
  // and the first's last kernel has ended by then.
  options.host_launch = 3 * kUs;
  make();
  ASSERT_TRUE(gpu->submit(stream, four_kernels(false), 0, nullptr));
  ASSERT_TRUE(gpu->submit(stream, four_kernels(false), 1, nullptr));
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 8u);
  EXPECT_EQ(log.events[4].start, 15 * kUs);
  EXPECT_EQ(log.events[7].start, 24 * kUs);
}

TEST_P(HostLaunch, AKernelLaunchedWhileItsContextIsSuspendedWaitsForTheResume) {
  options.host_launch = 3 * kUs;
  make();
  ASSERT_TRUE(gpu->submit(stream, four_kernels(false), 0, nullptr));
  engine.schedule_at(1 * kUs, [&] { ASSERT_TRUE(gpu->suspend_context(1)); });
  engine.schedule_at(10 * kUs, [&] { ASSERT_TRUE(gpu->resume_context(1)); });
  engine.run_until(core::kNever);
  // The first is launched at 3 us and held until the resume at 10; the host launched the others
  // at 6, 9 and 12 us, each by the time it could start.
  EXPECT_EQ(starts(), (std::vector<core::Nanos>{10 * kUs, 11 * kUs, 12 * kUs, 13 * kUs}));
}

TEST_P(HostLaunch, AKernelInterruptedByAnotherStreamKeepsItsLaunchTimes) {
  // On SMs 0-7, 1 us per launch: a (1 us) runs 1-2 us and b (0.25 us) 2-2.25 us; c is launched
  // at 3 us. Another stream in the same bandwidth domain submits a kernel at 1.1 us, launched
  // at 2.1 us, during b; it uses no bandwidth, so c still starts at 3 us.
  options.host_launch = 1 * kUs;
  gpu = std::make_unique<SimGpu>(engine, spec, options);
  gpu->add_observer(&log);
  stream = *gpu->create_stream(test::on_sms(0, 8, 1));
  const auto other = *gpu->create_stream(test::on_sms(8, 16, 2));
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->groups.push_back(workload::KernelGroup{
      .kernels = {make_kernel("a", 8, 1e6, 0), make_kernel("b", 8, 2.5e5, 0),
                  make_kernel("c", 8, 1e6, 0)},
      .repeat = 1});
  ASSERT_TRUE(gpu->submit(stream, seq, 0, nullptr));
  engine.schedule_at(1100, [&] {
    ASSERT_TRUE(gpu->submit(other, test::sequence_of({make_kernel("x", 8, 1e6, 0)}), 0, nullptr));
  });
  engine.run_until(core::kNever);
  const auto ours = log.of_stream(stream);
  ASSERT_EQ(ours.size(), 3u);
  EXPECT_EQ(ours[1].start, 2 * kUs);
  EXPECT_EQ(ours[1].end, 2250);
  EXPECT_EQ(ours[2].start, 3 * kUs);
}

TEST_P(HostLaunch, NoHostCostLeavesTimingAsBefore) {
  make();
  ASSERT_TRUE(gpu->submit(stream, four_kernels(true), 0, nullptr));
  engine.run_until(core::kNever);
  EXPECT_EQ(starts(), (std::vector<core::Nanos>{0, 1 * kUs, 2 * kUs, 3 * kUs}));
}

INSTANTIATE_TEST_SUITE_P(Batching, HostLaunch, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Batched" : "PerKernel"; });

}  // namespace
}  // namespace tessera::sim
