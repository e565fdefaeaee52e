// Stream priorities in the block dispatcher, worked out by hand on the test GPU (16 SMs; a block
// of 1e6 FP32 FLOPs takes 1 us alone on an SM) with every efficiency at 1 and no launch overhead.
// Every block fills an SM, so no two kernels' blocks share one. Parameter: co-residency on.

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::sequence_of;

constexpr core::Nanos kUs = core::kNanosPerMicro;

struct Submitted {
  device::StreamConfig config;
  workload::Kernel kernel;
};

class StreamPriority : public ::testing::TestWithParam<bool> {
 protected:
  hw::GpuSpec spec = test::TestGpu().build();

  using Meanwhile =
      std::function<void(Engine&, SimGpu&, const std::vector<device::StreamId>& streams)>;

  // Submits each kernel on its own stream at time 0, in order; `meanwhile` may schedule more
  // before the run. The one event of each stream.
  std::vector<test::Recorded> run(const std::vector<Submitted>& kernels,
                                  const Meanwhile& meanwhile = {}) {
    SimGpuOptions options = test::exact_options();
    options.co_residency = GetParam();
    Engine engine;
    SimGpu gpu(engine, spec, options);
    test::EventLog log;
    gpu.add_observer(&log);
    std::vector<device::StreamId> streams;
    for (const auto& k : kernels) {
      streams.push_back(*gpu.create_stream(k.config));
      EXPECT_TRUE(gpu.submit(streams.back(), sequence_of({k.kernel}), 0, nullptr));
    }
    if (meanwhile) meanwhile(engine, gpu, streams);
    engine.run_until(core::kNever);
    std::vector<test::Recorded> out;
    for (const auto s : streams) {
      const auto events = log.of_stream(s);
      EXPECT_EQ(events.size(), 1u);
      out.push_back(events.empty() ? test::Recorded{} : events[0]);
    }
    return out;
  }

  static device::StreamConfig on_all(device::ContextId context, int priority) {
    device::StreamConfig c = test::on_sms(0, 16, context);
    c.priority = priority;
    return c;
  }
};

TEST_P(StreamPriority, AHigherPriorityWaitingKernelStartsFirst) {
  // A fills all 16 SMs for 1 us; B and then C wait. Without priorities B, ready first, runs from
  // 1 to 2 us and C from 2 to 3; with C's stream above B's, C jumps it.
  const auto plain = run({{on_all(1, 0), make_kernel("a", 16, 1e6, 0)},
                          {on_all(2, 0), make_kernel("b", 16, 1e6, 0)},
                          {on_all(3, 0), make_kernel("c", 16, 1e6, 0)}});
  EXPECT_EQ(plain[1].start, 1 * kUs);
  EXPECT_EQ(plain[2].start, 2 * kUs);
  const auto ranked = run({{on_all(1, 0), make_kernel("a", 16, 1e6, 0)},
                           {on_all(2, 0), make_kernel("b", 16, 1e6, 0)},
                           {on_all(3, 5), make_kernel("c", 16, 1e6, 0)}});
  EXPECT_EQ(ranked[2].start, 1 * kUs);
  EXPECT_EQ(ranked[2].end, 2 * kUs);
  EXPECT_EQ(ranked[1].start, 2 * kUs);
  EXPECT_EQ(ranked[1].end, 3 * kUs);
}

TEST_P(StreamPriority, AHigherPriorityKernelTakesFreedSmsBeforeARunningOneGrows) {
  // A holds SMs 0-7 for 1 us. L (32 blocks) starts on SMs 8-15: 4 waves, 4 us. H (8 blocks)
  // waits. At 1 us SMs 0-7 free up.
  // Without priorities L grows first: its 24 blocks left on 16 SMs take 2 waves, to 3 us. Its last
  // wave fills 8 SMs, so with co-residency it gives 8 back at 2 us and H runs 2-3 us; without,
  // H waits for L's end and runs 3-4 us.
  // With H above L, H takes SMs 0-7 at 1 us and ends at 2 us; L has 16 blocks left then, grows
  // to 16 SMs and ends one wave later, at 3 us.
  const auto a = make_kernel("a", 8, 1e6, 0);
  const auto l = make_kernel("long", 32, 1e6, 0);
  const auto h = make_kernel("high", 8, 1e6, 0);
  const auto plain = run({{test::on_sms(0, 8, 1), a}, {on_all(2, 0), l}, {on_all(3, 0), h}});
  EXPECT_EQ(plain[1].end, 3 * kUs);
  EXPECT_EQ(plain[2].start, (GetParam() ? 2 : 3) * kUs);
  const auto ranked = run({{test::on_sms(0, 8, 1), a}, {on_all(2, 0), l}, {on_all(3, 5), h}});
  EXPECT_EQ(ranked[2].start, 1 * kUs);
  EXPECT_EQ(ranked[2].end, 2 * kUs);
  EXPECT_EQ(ranked[2].sms, 8);
  EXPECT_EQ(ranked[1].end, 3 * kUs);
}

TEST_P(StreamPriority, APriorityCanBeChangedOnAWaitingStream) {
  // As the first case, with C's priority raised by configure_stream at 0.5 us, while it waits.
  const auto r = run({{on_all(1, 0), make_kernel("a", 16, 1e6, 0)},
                      {on_all(2, 0), make_kernel("b", 16, 1e6, 0)},
                      {on_all(3, 0), make_kernel("c", 16, 1e6, 0)}},
                     [](Engine& engine, SimGpu& gpu, const std::vector<device::StreamId>& s) {
                       engine.schedule_at(kUs / 2, [&gpu, c = s[2]] {
                         ASSERT_TRUE(gpu.configure_stream(c, on_all(3, 1)));
                       });
                     });
  EXPECT_EQ(r[2].start, 1 * kUs);
  EXPECT_EQ(r[1].start, 2 * kUs);
}

TEST(StreamPriorityCapability, TheSimulatorSaysItHonoursPriorities) {
  Engine engine;
  SimGpu gpu(engine, test::TestGpu().build(), test::exact_options());
  EXPECT_TRUE(gpu.capabilities().stream_priorities);
}

INSTANTIATE_TEST_SUITE_P(CoResidency, StreamPriority, ::testing::Bool());

}  // namespace
}  // namespace tessera::sim
