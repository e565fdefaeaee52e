#pragma once
// A randomized workload that exercises every path of the simulated GPU at once: two tenants in
// disjoint SM partitions with their own bandwidth domains (isolated, so batched), one tenant on
// the rest of the SMs in the whole-device domain, and one that now and then floods every SM
// (which splits batches). Some kernels are persistent (they have checkpoints) and some
// submissions are block ranges of one kernel. Contexts are suspended and resumed, the clock moves,
// a stream is reconfigured and streams are asked to yield, at times drawn from the seed.
// Efficiencies and overheads are deliberately not round, so events rarely share a nanosecond.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/random.hpp"

namespace tessera::test {

struct MixedResult {
  std::string log;                           // every kernel event, in delivery order
  std::vector<std::string> per_stream;       // the same, split by stream
  std::vector<std::string> done_per_stream;  // done callbacks, split by stream
  device::DeviceStats stats;
  std::uint64_t engine_events = 0;
};

inline workload::KernelSequencePtr random_sequence(core::RandomStream& rng) {
  static constexpr const char* kNames[] = {"gemm", "attn", "norm", "act", "copy", "reduce"};
  auto seq = std::make_shared<workload::KernelSequence>();
  const int groups = 1 + static_cast<int>(rng.below(3));
  for (int g = 0; g < groups; ++g) {
    workload::KernelGroup group;
    group.repeat = 1 + static_cast<int>(rng.below(4));
    const int kernels = 1 + static_cast<int>(rng.below(6));
    for (int i = 0; i < kernels; ++i) {
      const int bps = 1 << rng.below(4);
      group.kernels.push_back(make_kernel(kNames[rng.below(6)], 1 + rng.below(64),
                                          rng.uniform(0, 5e5), rng.uniform(0, 1e5), bps));
      if (rng.below(4) == 0) group.kernels.back().checkpoints = 1 + static_cast<int>(rng.below(9));
    }
    seq->groups.push_back(std::move(group));
  }
  return seq;
}

inline MixedResult run_mixed(std::uint64_t seed, bool batch, core::Nanos horizon) {
  sim::SimGpuOptions options = exact_options(batch);
  options.achievable_compute_fraction = 0.73;
  options.achievable_bandwidth_fraction = 0.87;
  options.launch_overhead = 1234;
  options.max_batch_kernels = 17;  // short batches: more batch boundaries to get right
  sim::Engine engine;
  sim::SimGpu gpu(engine, TestGpu().build(), options);
  EventLog log;
  gpu.add_observer(&log);
  const auto d1 = *gpu.create_bandwidth_domain(0.25);
  const auto d2 = *gpu.create_bandwidth_domain(0.25);
  std::vector<device::StreamId> streams{
      *gpu.create_stream({.context = 1,
                          .sms = device::SmMask::range(0, 4),
                          .max_sms = 0,
                          .bandwidth_domain = d1,
                          .priority = 0}),
      *gpu.create_stream({.context = 2,
                          .sms = device::SmMask::range(4, 8),
                          .max_sms = 0,
                          .bandwidth_domain = d2,
                          .priority = 0}),
      *gpu.create_stream({.context = 3,
                          .sms = device::SmMask::range(8, 16),
                          .max_sms = 0,
                          .bandwidth_domain = device::kWholeDevice,
                          .priority = 0}),
      *gpu.create_stream({.context = 4,
                          .sms = {},
                          .max_sms = 6,
                          .bandwidth_domain = device::kWholeDevice,
                          .priority = 0}),
  };
  core::RandomStreams streams_rng(seed);
  std::vector<core::RandomStream> rngs;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    rngs.push_back(streams_rng.stream(fmt::format("stream{}", i)));
  }
  std::vector<std::string> done(streams.size());
  std::vector<std::uint64_t> next_tag(streams.size(), 0);

  // Each stream keeps submitting: on completion, the next submission after a random pause
  // (the flooding stream pauses much longer).
  std::function<void(std::size_t)> submit_next = [&](std::size_t i) {
    if (engine.now() >= horizon) return;
    auto on_done = [&, i](const device::SubmissionDone& d) {
      done[i] +=
          fmt::format("tag{} sub{} start{} end{}\n", d.tag, d.submitted, d.started, d.finished);
      const double mean_pause = i == 3 ? 200e3 : 3e3;
      engine.schedule_after(static_cast<core::Nanos>(rngs[i].exponential(1 / mean_pause)),
                            [&, i] { submit_next(i); });
    };
    auto seq = random_sequence(rngs[i]);
    const workload::Kernel& first = seq->groups[0].kernels[0];
    const bool atom = rngs[i].below(4) == 0;
    const std::int64_t begin =
        atom ? static_cast<std::int64_t>(rngs[i].below(static_cast<std::uint64_t>(first.blocks)))
             : 0;
    const auto status =
        atom ? gpu.submit_range(streams[i], workload::single_kernel(first),
                                {.begin = begin, .end = first.blocks}, next_tag[i]++, on_done)
             : gpu.submit(streams[i], std::move(seq), next_tag[i]++, on_done);
    if (!status) done[i] += status.error().message();
  };
  for (std::size_t i = 0; i < streams.size(); ++i) {
    engine.schedule_at(static_cast<core::Nanos>(rngs[i].uniform(0, 5e3)),
                       [&, i] { submit_next(i); });
  }

  // Control events, all scheduled up front.
  core::RandomStream control = streams_rng.stream("control");
  for (core::Nanos t = 0; t < horizon;) {
    t += static_cast<core::Nanos>(control.uniform(20e3, 120e3));
    const core::Nanos pause = static_cast<core::Nanos>(control.uniform(2e3, 30e3));
    switch (control.below(4)) {
      case 0:  // time-slice the third tenant away for a while
        engine.schedule_at(t, [&] { (void)gpu.suspend_context(3); });
        engine.schedule_at(t + pause, [&] { (void)gpu.resume_context(3); });
        break;
      case 1: {  // preempt a partition's tenant
        const device::ContextId c = 1 + static_cast<device::ContextId>(control.below(2));
        engine.schedule_at(t, [&, c] { (void)gpu.suspend_context(c); });
        engine.schedule_at(t + pause, [&, c] { (void)gpu.resume_context(c); });
        break;
      }
      case 2: {
        const double mhz = control.uniform(500, 1000);
        engine.schedule_at(t, [&, mhz] { (void)gpu.set_clock_mhz(mhz); });
        break;
      }
      default: {  // move the second partition's tenant between 4 and 2 SMs
        const int sms = control.below(2) == 0 ? 2 : 4;
        engine.schedule_at(t, [&, sms, d2] {
          (void)gpu.configure_stream(streams[1], {.context = 2,
                                                  .sms = device::SmMask::range(4, 4 + sms),
                                                  .max_sms = 0,
                                                  .bandwidth_domain = d2,
                                                  .priority = 0});
        });
      }
    }
  }
  // Yield requests, often enough to land in persistent kernels.
  core::RandomStream yields = streams_rng.stream("yields");
  for (core::Nanos t = 0; t < horizon;) {
    t += static_cast<core::Nanos>(yields.uniform(2e3, 12e3));
    const std::size_t i = yields.below(streams.size());
    engine.schedule_at(t, [&, i] { (void)gpu.request_yield(streams[i]); });
  }
  engine.run_until(core::kNever);

  MixedResult r;
  r.log = log.dump();
  for (std::size_t i = 0; i < streams.size(); ++i) {
    std::string s;
    for (const auto& e : log.of_stream(streams[i])) s += EventLog::line(e);
    r.per_stream.push_back(std::move(s));
  }
  r.done_per_stream = done;
  r.stats = gpu.stats();
  r.engine_events = engine.events_executed();
  return r;
}

}  // namespace tessera::test
