// Block-range launches (LithOS's atoms) and cooperative yield (CoGPU's preemption of persistent
// kernels) in the simulated GPU. Every test runs on the per-kernel path and on the batched one.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::on_sms;
using test::sequence_of;
using ::testing::HasSubstr;

constexpr core::Nanos kUs = core::kNanosPerMicro;

// A persistent kernel: one block per SM of the test GPU, 10 us of work each, `checkpoints` places
// where it can stop.
workload::Kernel persistent(int checkpoints, std::int64_t blocks = 16) {
  auto k = make_kernel("persistent", blocks, 10e6, 0);
  k.checkpoints = checkpoints;
  return k;
}

class Atoms : public ::testing::TestWithParam<bool> {
 protected:
  // Launch overhead 2 us, atom prelude 1 us, save 0.5 us; otherwise the exact test options (a
  // block of 1e6 FLOPs takes 1 us on one SM).
  static SimGpuOptions options(core::Nanos launch_overhead) {
    auto o = test::exact_options(GetParam());
    o.launch_overhead = launch_overhead;
    o.atom_launch_overhead = 1 * kUs;
    o.yield_save_cost = kUs / 2;
    return o;
  }
  explicit Atoms(core::Nanos launch_overhead = 0)
      : gpu(engine, test::TestGpu().build(), options(launch_overhead)) {
    gpu.add_observer(&log);
  }

  device::DoneCallback record() {
    return [this](const device::SubmissionDone& d) { dones.push_back(d); };
  }

  Engine engine;
  SimGpu gpu;
  test::EventLog log;
  std::vector<device::SubmissionDone> dones;
};

// The same fixture with a 2 us launch overhead.
class AtomsWithOverhead : public Atoms {
 protected:
  AtomsWithOverhead() : Atoms(2 * kUs) {}
};

TEST_P(Atoms, TheDeviceSaysItCanRunRangesAndYield) {
  EXPECT_TRUE(gpu.capabilities().block_ranges);
  EXPECT_TRUE(gpu.capabilities().kernel_preemption);
}

TEST_P(AtomsWithOverhead, ARangeRunsOnlyItsBlocksPlusThePrelude) {
  const auto whole = sequence_of({make_kernel("gemm", 160, 1e6, 0)});
  const workload::Kernel* k = &whole->groups[0].kernels[0];
  const auto s = *gpu.create_stream({});
  // 40 blocks on 16 SMs: 3 rounds of 1 us, after 2 us of launch and 1 us of prelude.
  ASSERT_TRUE(gpu.submit_range(s, whole, {.begin = 0, .end = 40}, 1, record()));
  // 10 blocks: one round on 10 SMs.
  ASSERT_TRUE(gpu.submit_range(s, whole, {.begin = 150, .end = 160}, 2, record()));
  // The whole grid as an ordinary launch: 10 rounds, no prelude.
  ASSERT_TRUE(gpu.submit(s, whole, 3, record()));
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 3u);
  const auto& a = log.events[0];
  EXPECT_EQ(a.start, 0);
  EXPECT_EQ(a.end, 6 * kUs);
  EXPECT_EQ(a.sms, 16);
  EXPECT_EQ(a.blocks, (device::BlockRange{.begin = 0, .end = 40}));
  EXPECT_EQ(a.kernel, k);  // the submitted kernel, launch configuration untouched
  const auto& b = log.events[1];
  EXPECT_EQ(b.start, 6 * kUs);
  EXPECT_EQ(b.end, 10 * kUs);
  EXPECT_EQ(b.sms, 10);
  EXPECT_EQ(b.blocks, (device::BlockRange{.begin = 150, .end = 160}));
  EXPECT_EQ(b.kernel, k);
  const auto& c = log.events[2];
  EXPECT_EQ(c.end, 10 * kUs + 12 * kUs);
  EXPECT_EQ(c.blocks, (device::BlockRange{.begin = 0, .end = 160}));
  EXPECT_FALSE(a.yielded || b.yielded || c.yielded);
  ASSERT_EQ(dones.size(), 3u);
  EXPECT_EQ(dones[1].finished, 10 * kUs);
}

TEST_P(AtomsWithOverhead, ARangeTakesAsLongAsAKernelOfThatManyBlocksPlusThePrelude) {
  // Occupancy and waves follow the range's size: 8 resident blocks per SM, bandwidth-bound
  // blocks, on a 6-SM partition.
  const auto big = make_kernel("mixed", 1000, 3e6, 4e5, 8);
  for (const std::int64_t size : {1, 5, 6, 7, 48, 97, 1000}) {
    SCOPED_TRACE(size);
    auto same_size = big;
    same_size.blocks = size;
    const core::Nanos alone = test::run_alone(test::TestGpu().build(), options(2 * kUs),
                                              sequence_of({same_size}), on_sms(0, 6));
    Engine e;
    SimGpu g(e, test::TestGpu().build(), options(2 * kUs));
    const auto s = *g.create_stream(on_sms(0, 6));
    core::Nanos finished = -1;
    ASSERT_TRUE(g.submit_range(s, sequence_of({big}), {.begin = 1000 - size, .end = 1000}, 0,
                               [&](const device::SubmissionDone& d) { finished = d.finished; }));
    e.run_until(core::kNever);
    EXPECT_EQ(finished, alone + 1 * kUs);
  }
}

TEST_P(Atoms, RangesThatTileTheGridRunEveryBlockExactlyOnce) {
  const auto seq = sequence_of({make_kernel("tiled", 1000, 2e5, 3e4, 4)});
  const auto a = *gpu.create_stream(on_sms(0, 8, 1));
  const auto b = *gpu.create_stream(on_sms(8, 16, 2));
  // Uneven atoms, alternating between two partitions.
  const std::vector<std::int64_t> cuts = {0, 1, 8, 72, 73, 300, 512, 777, 999, 1000};
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    ASSERT_TRUE(gpu.submit_range(i % 2 == 0 ? a : b, seq, {.begin = cuts[i], .end = cuts[i + 1]}, i,
                                 record()));
  }
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), cuts.size() - 1);
  std::vector<int> runs(1000, 0);
  for (const auto& e : log.events) {
    EXPECT_EQ(e.blocks, (device::BlockRange{.begin = cuts[e.submission_tag],
                                            .end = cuts[e.submission_tag + 1]}));
    for (auto blk = e.blocks.begin; blk < e.blocks.end; ++blk) ++runs[blk];
  }
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), 1000);
  EXPECT_EQ(gpu.stats().kernels_completed, static_cast<std::int64_t>(cuts.size() - 1));
}

TEST_P(Atoms, WhatCannotBeARangeIsRejectedWithTheReason) {
  const auto s = *gpu.create_stream({});
  const auto k = make_kernel("gemm", 64, 1e6, 0);
  const auto expect_rejected = [&](const core::Status& st, const char* words) {
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
    EXPECT_THAT(st.error().message(), HasSubstr(words));
  };
  expect_rejected(gpu.submit_range(s, sequence_of({k, k}), {.begin = 0, .end = 8}, 0, nullptr),
                  "1 group(s) with 2 kernel launch(es)");
  expect_rejected(gpu.submit_range(s, sequence_of({k}, 3), {.begin = 0, .end = 8}, 0, nullptr),
                  "1 group(s) with 3 kernel launch(es)");
  auto two_groups = std::make_shared<workload::KernelSequence>();
  two_groups->groups = {{.kernels = {k}, .repeat = 1}, {.kernels = {k}, .repeat = 1}};
  expect_rejected(gpu.submit_range(s, two_groups, {.begin = 0, .end = 8}, 0, nullptr),
                  "2 group(s)");
  expect_rejected(gpu.submit_range(s, nullptr, {.begin = 0, .end = 8}, 0, nullptr), "null pointer");
  auto grid_sync = make_kernel("grid_sync_reduce", 64, 1e6, 0);
  grid_sync.block_independent = false;
  expect_rejected(gpu.submit_range(s, sequence_of({grid_sync}), {.begin = 0, .end = 8}, 0, nullptr),
                  "kernel 'grid_sync_reduce' synchronises across blocks");
  expect_rejected(gpu.submit_range(s, sequence_of({k}), {.begin = 5, .end = 5}, 0, nullptr),
                  "[5, 5) of kernel 'gemm' is empty");
  expect_rejected(gpu.submit_range(s, sequence_of({k}), {.begin = 60, .end = 65}, 0, nullptr),
                  "[60, 65) of kernel 'gemm' is outside the grid; give a non-empty range inside "
                  "its grid [0, 64)");
  expect_rejected(gpu.submit_range(s, sequence_of({k}), {.begin = -1, .end = 4}, 0, nullptr),
                  "outside the grid");
  // A kernel over the GPU's limits is refused as in submit().
  auto huge = k;
  huge.block.threads = 4096;
  ASSERT_FALSE(gpu.submit_range(s, sequence_of({huge}), {.begin = 0, .end = 8}, 0, nullptr));
  EXPECT_FALSE(gpu.submit_range(99, sequence_of({k}), {.begin = 0, .end = 8}, 0, nullptr));
  // Nothing was queued by the rejected calls.
  engine.run_until(core::kNever);
  EXPECT_TRUE(log.events.empty());
  // A kernel that must run whole still runs whole through submit().
  ASSERT_TRUE(gpu.submit(s, sequence_of({grid_sync}), 0, nullptr));
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 1u);
  EXPECT_EQ(log.events[0].blocks, (device::BlockRange{.begin = 0, .end = 64}));
}

TEST_P(Atoms, AYieldStopsAtTheNextCheckpointAndTheRestRunsOnTheStreamsNewSms) {
  const auto seq = sequence_of({persistent(4)});
  const auto s = *gpu.create_stream(on_sms(0, 16));
  ASSERT_TRUE(gpu.submit(s, seq, 7, record()));
  // Checkpoints at 2, 4, 6 and 8 us of the 10 us kernel. At 3 us the stream is moved to SMs 0-7
  // (which the running kernel does not see) and the kernel is asked to yield.
  engine.schedule_at(3 * kUs, [&] {
    ASSERT_TRUE(gpu.configure_stream(s, on_sms(0, 8)));
    ASSERT_TRUE(gpu.request_yield(s));
  });
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 2u);
  const auto& stopped = log.events[0];
  EXPECT_TRUE(stopped.yielded);
  EXPECT_EQ(stopped.start, 0);
  EXPECT_EQ(stopped.end, 4 * kUs + kUs / 2);  // checkpoint 2 of 4, then the save
  EXPECT_EQ(stopped.sms, 16);
  EXPECT_EQ(stopped.blocks, (device::BlockRange{.begin = 0, .end = 16}));
  EXPECT_EQ(stopped.kernel, &seq->groups[0].kernels[0]);
  // The same 16 blocks, each with 6 us left, on the 8 SMs the stream has now: 2 rounds.
  const auto& rest = log.events[1];
  EXPECT_FALSE(rest.yielded);
  EXPECT_EQ(rest.start, 4 * kUs + kUs / 2);
  EXPECT_EQ(rest.sms, 8);
  EXPECT_EQ(rest.end, rest.start + 12 * kUs);
  EXPECT_EQ(rest.blocks, stopped.blocks);
  EXPECT_EQ(rest.kernel, stopped.kernel);
  ASSERT_EQ(dones.size(), 1u);
  EXPECT_EQ(dones[0].started, 0);
  EXPECT_EQ(dones[0].finished, rest.end);
  EXPECT_EQ(gpu.stats().kernels_completed, 1);  // a yielded part is not a kernel
}

TEST_P(AtomsWithOverhead, AYieldConservesWorkAndPaysTheSaveAndASecondLaunch) {
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(s, sequence_of({persistent(4)}), 0, record()));
  engine.schedule_at(3 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(s)); });
  engine.run_until(core::kNever);
  // Alone it takes 2 + 10 = 12 us, progressing fluidly: checkpoint 2 (2/5 of it) at 4.8 us.
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].end, 4800 + 500);
  // The rest: a new launch (2 us) and 3/5 of every block (6 us) on the same 16 SMs.
  EXPECT_EQ(log.events[1].start, 5300);
  EXPECT_EQ(log.events[1].end, 5300 + 8 * kUs);
  // The compute done (4 + 6 us) is the kernel's; what the yield cost is the save and the launch
  // overhead paid twice, less the part of the first one not yet spent at the checkpoint.
  EXPECT_EQ(dones.at(0).finished, 12 * kUs + 500 + 2 * kUs - 1200);
}

TEST_P(Atoms, EachYieldStopsAtTheFollowingCheckpointAndRequestsDoNotStack) {
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(s, sequence_of({persistent(4)}), 0, record()));
  engine.schedule_at(1 * kUs, [&] {
    ASSERT_TRUE(gpu.request_yield(s));
    ASSERT_TRUE(gpu.request_yield(s));  // already yielding: no effect
  });
  engine.schedule_at(2200, [&] { ASSERT_TRUE(gpu.request_yield(s)); });  // while it saves
  // The rest relaunched at 2.5 us runs the 4/5 left (8 us); at 3 us it is at 0.25 of the kernel,
  // so it stops at checkpoint 2 (0.4): a quarter of its 8 us after it started.
  engine.schedule_at(3 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(s)); });
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 3u);
  EXPECT_TRUE(log.events[0].yielded);
  EXPECT_EQ(log.events[0].end, 2500);
  EXPECT_TRUE(log.events[1].yielded);
  EXPECT_EQ(log.events[1].start, 2500);
  EXPECT_EQ(log.events[1].end, 2500 + 2000 + 500);
  EXPECT_FALSE(log.events[2].yielded);
  EXPECT_EQ(log.events[2].start, 5000);
  EXPECT_EQ(log.events[2].end, 11 * kUs);  // 10 us of work and two saves
}

TEST_P(Atoms, AYieldAfterTheLastCheckpointOrWithoutCheckpointsChangesNothing) {
  const auto a = *gpu.create_stream(on_sms(0, 8));
  const auto b = *gpu.create_stream(on_sms(8, 16));
  const auto idle = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(a, sequence_of({persistent(0, 8)}), 0, record()));
  ASSERT_TRUE(gpu.submit(b, sequence_of({persistent(1, 8)}), 0, record()));
  engine.schedule_at(3 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(a)); });
  engine.schedule_at(6 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(b)); });  // past its only one
  engine.schedule_at(7 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(idle)); });
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 2u);
  for (const auto& e : log.events) {
    EXPECT_FALSE(e.yielded);
    EXPECT_EQ(e.start, 0);
    EXPECT_EQ(e.end, 10 * kUs);
  }
  const auto missing = gpu.request_yield(42);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);
}

TEST_P(Atoms, APendingYieldSurvivesSuspensionAndASavingKernelFinishesSaving) {
  const auto s = *gpu.create_stream(on_sms(0, 8, 1));
  const auto t = *gpu.create_stream(on_sms(8, 16, 2));
  // 16 blocks of 10 us on 8 SMs: 20 us, checkpoints at 4, 8, 12 and 16 us.
  ASSERT_TRUE(gpu.submit(s, sequence_of({persistent(4)}), 0, record()));
  ASSERT_TRUE(gpu.submit(t, sequence_of({persistent(4)}), 0, record()));
  // s: asked at 1 us to stop at checkpoint 1 (4 us), suspended at 1.5 us, resumed at 5 us: it
  // reaches the checkpoint at 7.5 us, saves, and the rest (16 blocks of 8 us: 16 us) runs from
  // 8 us.
  engine.schedule_at(1 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(s)); });
  engine.schedule_at(1500, [&] { ASSERT_TRUE(gpu.suspend_context(1)); });
  engine.schedule_at(5 * kUs, [&] { ASSERT_TRUE(gpu.resume_context(1)); });
  // t: stops at 4 us and is suspended at 4.2 us while it saves: the save completes, the rest
  // waits for the resume.
  engine.schedule_at(1 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(t)); });
  engine.schedule_at(4200, [&] { ASSERT_TRUE(gpu.suspend_context(2)); });
  engine.schedule_at(6 * kUs, [&] { ASSERT_TRUE(gpu.resume_context(2)); });
  engine.run_until(core::kNever);
  const auto es = log.of_stream(s);
  ASSERT_EQ(es.size(), 2u);
  EXPECT_TRUE(es[0].yielded);
  EXPECT_EQ(es[0].end, 8 * kUs);
  EXPECT_EQ(es[1].start, 8 * kUs);
  EXPECT_EQ(es[1].end, 24 * kUs);
  const auto et = log.of_stream(t);
  ASSERT_EQ(et.size(), 2u);
  EXPECT_TRUE(et[0].yielded);
  EXPECT_EQ(et[0].end, 4500);
  EXPECT_EQ(et[1].start, 6 * kUs);
  EXPECT_EQ(et[1].end, 22 * kUs);
}

TEST_P(Atoms, ASavingKernelHoldsItsSmsUntilTheSaveEnds) {
  const auto s = *gpu.create_stream(on_sms(0, 8));
  const auto other = *gpu.create_stream(on_sms(0, 16));
  ASSERT_TRUE(gpu.submit(s, sequence_of({persistent(4, 8)}), 0, record()));
  engine.schedule_at(1 * kUs, [&] { ASSERT_TRUE(gpu.request_yield(s)); });
  // At 2.2 us s is saving on SMs 0-7: a 16-block kernel of another stream gets only 8-15.
  engine.schedule_at(2200, [&] {
    ASSERT_TRUE(gpu.submit(other, sequence_of({make_kernel("other", 16, 1e6, 0)}), 0, record()));
    const auto st = gpu.stats();
    EXPECT_NEAR(st.sm_busy_fraction, (8 * 2200.0) / (16 * 2200.0), 1e-12);
  });
  engine.run_until(core::kNever);
  const auto eo = log.of_stream(other).at(0);
  EXPECT_EQ(eo.start, 2200);
  EXPECT_EQ(eo.sms, 8);
  const auto es = log.of_stream(s);
  ASSERT_EQ(es.size(), 2u);
  EXPECT_EQ(es[0].end, 2500);
  // At 2.5 us the save ends. The other kernel (13.6 blocks left) grows first, to 14 SMs; s's
  // rest starts at once on the 2 SMs of its set left over.
  EXPECT_EQ(es[1].start, 2500);
  EXPECT_EQ(es[1].sms, 2);
}

struct MixRun {
  std::vector<std::string> per_stream;
  std::string dones;
  device::DeviceStats stats;
  int yields = 0;
};

// Stream 0 (SMs 0-11, domain 0) launches a GEMM as three atoms, then a whole one, over and over;
// stream 1 (SMs 12-15, its own domain) trains with a persistent kernel between two ordinary ones.
// From `t` on, stream 1 is asked to yield every 23.3 us, and is moved between SMs 12-15 and 14-15
// at each request; stream 0 (no checkpoints) is asked too.
MixRun run_mix(bool batch, core::Nanos t) {
  auto options = test::exact_options(batch);
  options.launch_overhead = 2345;
  options.achievable_compute_fraction = 0.81;
  options.atom_launch_overhead = 1111;
  options.yield_save_cost = 777;
  Engine engine;
  SimGpu gpu(engine, test::TestGpu().build(), options);
  test::EventLog log;
  gpu.add_observer(&log);
  const auto d = *gpu.create_bandwidth_domain(0.3);
  const auto s0 = *gpu.create_stream(on_sms(0, 12, 1));
  const device::StreamConfig wide{.context = 2,
                                  .sms = device::SmMask::range(12, 16),
                                  .max_sms = 0,
                                  .bandwidth_domain = d,
                                  .priority = 0};
  device::StreamConfig narrow = wide;
  narrow.sms = device::SmMask::range(14, 16);
  const auto s1 = *gpu.create_stream(wide);
  MixRun r;
  const auto gemm = sequence_of({make_kernel("gemm", 96, 3.1e5, 7.7e4, 2)});
  auto persistent_step = make_kernel("persistent", 8, 9e6, 1.1e6, 1);
  persistent_step.checkpoints = 7;
  const auto train = sequence_of({make_kernel("fwd", 40, 9e5, 2e5, 1), persistent_step,
                                  make_kernel("bwd", 40, 1.8e6, 3e5, 1)});
  const auto done = [&](const device::SubmissionDone& x) {
    r.dones +=
        fmt::format("s{} {} {} {} {}\n", x.stream, x.tag, x.submitted, x.started, x.finished);
  };
  for (std::uint64_t i = 0; i < 30; ++i) {
    EXPECT_TRUE(gpu.submit_range(s0, gemm, {.begin = 0, .end = 40}, 4 * i, done));
    EXPECT_TRUE(gpu.submit_range(s0, gemm, {.begin = 40, .end = 41}, 4 * i + 1, done));
    EXPECT_TRUE(gpu.submit_range(s0, gemm, {.begin = 41, .end = 96}, 4 * i + 2, done));
    EXPECT_TRUE(gpu.submit(s0, gemm, 4 * i + 3, done));
  }
  for (std::uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(gpu.submit(s1, train, i, done));
  for (int i = 0; i < 12; ++i) {
    engine.schedule_at(t + i * 23'300, [&, i] {
      EXPECT_TRUE(gpu.configure_stream(s1, i % 2 == 0 ? narrow : wide));
      EXPECT_TRUE(gpu.request_yield(s1));
      EXPECT_TRUE(gpu.request_yield(s0));
    });
  }
  engine.run_until(core::kNever);
  r.per_stream.resize(2);
  for (device::StreamId s : {s0, s1}) {
    for (const auto& e : log.of_stream(s)) {
      r.per_stream[s] += test::EventLog::line(e);
      r.yields += e.yielded ? 1 : 0;
    }
  }
  r.stats = gpu.stats();
  return r;
}

TEST(AtomsAndYields, BatchedAndPerKernelPathsAgree) {
  int yields = 0;
  for (core::Nanos t = 1'001; t < 300 * kUs; t += 29'989) {
    SCOPED_TRACE(t);
    const MixRun per_kernel = run_mix(false, t);
    const MixRun batched = run_mix(true, t);
    EXPECT_EQ(per_kernel.per_stream, batched.per_stream);
    EXPECT_EQ(per_kernel.dones, batched.dones);
    EXPECT_EQ(per_kernel.stats.elapsed, batched.stats.elapsed);
    EXPECT_EQ(per_kernel.stats.kernels_completed, batched.stats.kernels_completed);
    EXPECT_EQ(per_kernel.stats.kernels_completed, 30 * 4 + 8 * 3);
    EXPECT_NEAR(per_kernel.stats.energy_joules, batched.stats.energy_joules,
                1e-12 * per_kernel.stats.energy_joules);
    yields += per_kernel.yields;
  }
  EXPECT_GT(yields, 10);  // the requests did land in persistent kernels
}

INSTANTIATE_TEST_SUITE_P(PerKernelAndBatched, Atoms, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Batched" : "PerKernel"; });
INSTANTIATE_TEST_SUITE_P(PerKernelAndBatched, AtomsWithOverhead, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Batched" : "PerKernel"; });

}  // namespace
}  // namespace tessera::sim
