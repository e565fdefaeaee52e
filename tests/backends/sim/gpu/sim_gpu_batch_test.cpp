// The exact fast path: kernels of an isolated stream timed in one go must give exactly the
// per-kernel path's events, times and done callbacks, and split back cleanly whenever anything
// else touches their SMs, bandwidth domain, clock or context.

#include <gtest/gtest.h>

#include <vector>

#include "backends/sim/gpu/mixed_scenario.hpp"
#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::sequence_of;

constexpr core::Nanos kUs = core::kNanosPerMicro;

// A decode-step-like sequence: 4 layers of 6 kernels, mixed compute- and memory-bound.
workload::KernelSequencePtr decode_like(bool graph = false) {
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->graph = graph;
  seq->groups.push_back({.kernels = {make_kernel("embed", 8, 1e4, 3e4, 8)}, .repeat = 1});
  seq->groups.push_back(
      {.kernels = {make_kernel("norm", 4, 2e4, 1.1e4, 8), make_kernel("qkv", 96, 3.1e5, 7.7e4, 2),
                   make_kernel("attn", 32, 1.7e5, 5.3e4, 4),
                   make_kernel("o_proj", 64, 2.9e5, 6.1e4, 2),
                   make_kernel("mlp_up", 224, 3.3e5, 8.9e4, 2),
                   make_kernel("mlp_down", 112, 3.7e5, 9.3e4, 2)},
       .repeat = 4});
  seq->groups.push_back({.kernels = {make_kernel("sample", 1, 3e4, 1e3, 1)}, .repeat = 1});
  return seq;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct PairRun {
  std::vector<std::string> per_stream;
  std::vector<std::string> dones;
  device::DeviceStats stats;
  std::uint64_t engine_events;
};

// Host launch costs: none, or a host that falls behind the GPU now and then.
struct Host {
  core::Nanos launch = 0;
  core::Nanos graph = 0;  // > 0: decode steps are graphs launched at this cost
};

// Stream 0 runs decode steps back to back on SMs 0-11; stream 1 (SMs 12-15 in its own domain)
// trains alongside; at `intrude` a third stream submits one kernel on all SMs.
PairRun run_pair(bool batch, core::Nanos intrude, Host host = {}) {
  auto options = test::exact_options(batch);
  options.host_launch = host.launch;
  options.graph_launch = host.graph;
  options.launch_overhead = 2345;
  options.achievable_compute_fraction = 0.81;
  Engine engine;
  SimGpu gpu(engine, test::TestGpu().build(), options);
  test::EventLog log;
  gpu.add_observer(&log);
  const auto d = *gpu.create_bandwidth_domain(0.3);
  const auto s0 = *gpu.create_stream({.context = 1,
                                      .sms = device::SmMask::range(0, 12),
                                      .max_sms = 0,
                                      .bandwidth_domain = 0,
                                      .priority = 0});
  const auto s1 = *gpu.create_stream({.context = 2,
                                      .sms = device::SmMask::range(12, 16),
                                      .max_sms = 0,
                                      .bandwidth_domain = d,
                                      .priority = 0});
  const auto s2 = *gpu.create_stream(
      {.context = 3, .sms = {}, .max_sms = 0, .bandwidth_domain = 0, .priority = 0});
  PairRun r;
  r.per_stream.resize(3);
  r.dones.resize(3);
  std::function<void(device::StreamId, int)> loop = [&](device::StreamId s, int left) {
    auto seq =
        s == s0
            ? decode_like(host.graph > 0)
            : sequence_of(
                  {make_kernel("fwd", 40, 9e5, 2e5, 1), make_kernel("bwd", 40, 1.8e6, 3e5, 1)}, 3);
    EXPECT_TRUE(gpu.submit(
        s, seq, static_cast<std::uint64_t>(left), [&, s, left](const device::SubmissionDone& done) {
          r.dones[s] +=
              fmt::format("{} {} {} {}\n", done.tag, done.submitted, done.started, done.finished);
          if (left > 1) loop(s, left - 1);
        }));
  };
  loop(s0, 20);
  loop(s1, 10);
  engine.schedule_at(intrude, [&] {
    EXPECT_TRUE(gpu.submit(s2, sequence_of({make_kernel("intruder", 64, 4e5, 1e5, 4)}), 99,
                           [&](const device::SubmissionDone& done) {
                             r.dones[s2] += fmt::format("{} {}\n", done.started, done.finished);
                           }));
  });
  engine.run_until(core::kNever);
  for (device::StreamId s : {s0, s1, s2}) {
    for (const auto& e : log.of_stream(s)) r.per_stream[s] += test::EventLog::line(e);
  }
  r.stats = gpu.stats();
  r.engine_events = engine.events_executed();
  return r;
}

void expect_same(const PairRun& per_kernel, const PairRun& batched) {
  EXPECT_EQ(per_kernel.per_stream, batched.per_stream);
  EXPECT_EQ(per_kernel.dones, batched.dones);
  EXPECT_EQ(per_kernel.stats.elapsed, batched.stats.elapsed);
  EXPECT_EQ(per_kernel.stats.kernels_completed, batched.stats.kernels_completed);
  EXPECT_NEAR(per_kernel.stats.energy_joules, batched.stats.energy_joules,
              1e-12 * per_kernel.stats.energy_joules);
  EXPECT_NEAR(per_kernel.stats.sm_busy_fraction, batched.stats.sm_busy_fraction, 1e-12);
}

TEST(Batching, IsolatedStreamsGiveThePerKernelEventsWithFarFewerEngineEvents) {
  const PairRun per_kernel = run_pair(false, core::kNever / 4);  // the intruder comes after the end
  const PairRun batched = run_pair(true, core::kNever / 4);
  expect_same(per_kernel, batched);
  EXPECT_FALSE(per_kernel.per_stream[0].empty());
  // 20 decode steps of 26 kernels and 10 iterations of 6: one engine event per kernel, or about
  // one per submission when batched.
  EXPECT_GE(per_kernel.engine_events, 20u * 26 + 10 * 6);
  EXPECT_LE(batched.engine_events, 20u + 10 + 4);
}

TEST(Batching, AnIntruderSplitsTheBatchesItTouchesExactly) {
  // Intrude at many points, inside kernels of the first decode steps.
  for (core::Nanos t = 1'001; t < 400 * kUs; t += 37'777) {
    SCOPED_TRACE(t);
    expect_same(run_pair(false, t), run_pair(true, t));
  }
}

TEST(Batching, BatchesStopWhereTheHostFallsBehindAndSplitExactly) {
  // 3.5 us per eager launch is longer than some kernels (2.3 us of launch overhead and little
  // work) and shorter than others, so the host falls behind and catches up within each
  // submission; decode steps as graphs in the second.
  for (const Host host : {Host{.launch = 3500, .graph = 0}, Host{.launch = 3500, .graph = 4100}}) {
    SCOPED_TRACE(host.graph);
    expect_same(run_pair(false, core::kNever / 4, host), run_pair(true, core::kNever / 4, host));
    for (core::Nanos t = 1'001; t < 400 * kUs; t += 53'111) {
      SCOPED_TRACE(t);
      expect_same(run_pair(false, t, host), run_pair(true, t, host));
    }
  }
  // The host's launches show: the same work ends later than with a host that keeps up, and
  // batches still form where the host is ahead.
  const PairRun lagging = run_pair(true, core::kNever / 4, Host{.launch = 3500});
  const PairRun keeping_up = run_pair(true, core::kNever / 4);
  EXPECT_GT(lagging.stats.elapsed, keeping_up.stats.elapsed);
  EXPECT_LT(lagging.engine_events,
            run_pair(false, core::kNever / 4, Host{.launch = 3500}).engine_events / 2);
}

TEST(Batching, MixedScenarioMatchesThePerKernelPath) {
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE(seed);
    const auto per_kernel = test::run_mixed(seed, false, 3 * core::kNanosPerMilli);
    const auto batched = test::run_mixed(seed, true, 3 * core::kNanosPerMilli);
    EXPECT_GT(per_kernel.stats.kernels_completed, 500);
    // Persistent kernels were stopped at checkpoints, and atoms that start past block 0 ran.
    EXPECT_GT(count(per_kernel.log, " yielded\n"), 5u);
    EXPECT_GT(count(per_kernel.log, "blocks=[") - count(per_kernel.log, "blocks=[0,"), 5u);
    EXPECT_EQ(per_kernel.per_stream, batched.per_stream);
    EXPECT_EQ(per_kernel.done_per_stream, batched.done_per_stream);
    EXPECT_EQ(per_kernel.stats.elapsed, batched.stats.elapsed);
    EXPECT_EQ(per_kernel.stats.kernels_completed, batched.stats.kernels_completed);
    EXPECT_NEAR(per_kernel.stats.energy_joules, batched.stats.energy_joules,
                1e-12 * per_kernel.stats.energy_joules);
    // The fast path was taken: fewer engine events for the same work.
    EXPECT_LT(batched.engine_events, per_kernel.engine_events);
  }
}

TEST(Batching, StatsMidBatchCountWhatHasRunSoFar) {
  for (bool batch : {false, true}) {
    Engine engine;
    SimGpu gpu(engine, test::TestGpu().build(), test::exact_options(batch));
    const auto s = *gpu.create_stream({});
    ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("k", 16, 1e6, 0)}, 10), 0, nullptr));
    engine.run_until(3500);
    const auto st = gpu.stats();
    EXPECT_EQ(st.kernels_completed, 3) << batch;
    EXPECT_DOUBLE_EQ(st.sm_busy_fraction, 1.0) << batch;
    EXPECT_NEAR(st.energy_joules, 380 * 3.5e-6, 1e-12) << batch;
  }
}

}  // namespace
}  // namespace tessera::sim
