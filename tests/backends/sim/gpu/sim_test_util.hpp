#pragma once
// Kernels, options and recorders shared by the simulator tests.

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_gpu.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::test {

// Every efficiency at 1 and no launch overhead, so times follow from the test GPU's round numbers:
// a block of 1e6 FP32 FLOPs takes 1 us on one SM at the boost clock, and one SM draws at most
// 200 bytes/ns (2 x its 100 bytes/ns even share of 1600).
inline sim::SimGpuOptions exact_options(bool batch = true) {
  sim::SimGpuOptions o;
  o.achievable_compute_fraction = 1;
  o.achievable_bandwidth_fraction = 1;
  o.sm_bandwidth_multiple = 2;
  o.launch_overhead = 0;
  o.compute_power_weight = 0.7;
  o.batch_isolated_kernels = batch;
  return o;
}

// Block resources that give exactly `bps` resident blocks per SM on the test GPU (1, 2, 4 or 8):
// threads and registers both run out at bps blocks.
inline workload::BlockResources block_for_bps(int bps) {
  const int threads = std::min(1024, 2048 / bps);
  return workload::BlockResources{.threads = threads,
                                  .registers_per_thread = 65536 / (threads * bps),
                                  .shared_memory_bytes = 0};
}

inline workload::Kernel make_kernel(std::string_view name, std::int64_t blocks,
                                    double flops_per_block, double bytes_per_block, int bps = 1) {
  workload::Kernel k;
  k.name = name;
  k.kind = workload::KernelClass::kOther;
  k.pipe = workload::ComputePipe::kFp32;
  k.blocks = blocks;
  k.block = block_for_bps(bps);
  k.flops_per_block = flops_per_block;
  k.bytes_per_block = bytes_per_block;
  return k;
}

// A stream on SMs [begin, end) under `context`, with the whole device's bandwidth.
inline device::StreamConfig on_sms(int begin, int end, device::ContextId context = 0) {
  return {.context = context,
          .sms = device::SmMask::range(begin, end),
          .max_sms = 0,
          .bandwidth_domain = device::kWholeDevice,
          .priority = 0};
}

inline workload::KernelSequencePtr sequence_of(std::initializer_list<workload::Kernel> kernels,
                                               int repeat = 1) {
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->groups.push_back(workload::KernelGroup{.kernels = kernels, .repeat = repeat});
  return seq;
}

// A kernel event as recorded: the kernel pointer is only valid during the notification (the
// sequence may be gone after), so the name is copied; the address is kept for identity checks by
// tests that keep the sequence alive.
struct Recorded {
  device::StreamId stream;
  device::ContextId context;
  device::DomainId bandwidth_domain;
  std::string name;
  const workload::Kernel* kernel;
  std::uint64_t submission_tag;
  core::Nanos start;
  core::Nanos end;
  int sms;
  device::BlockRange blocks;
  bool yielded;
};

// Records every kernel event; dump() is a byte-comparable log.
class EventLog final : public device::DeviceObserver {
 public:
  void on_kernel_complete(const device::KernelEvent& e) override {
    events.push_back(Recorded{.stream = e.stream,
                              .context = e.context,
                              .bandwidth_domain = e.bandwidth_domain,
                              .name = std::string(e.kernel->name),
                              .kernel = e.kernel,
                              .submission_tag = e.submission_tag,
                              .start = e.start,
                              .end = e.end,
                              .sms = e.sms,
                              .blocks = e.blocks,
                              .yielded = e.yielded});
  }

  std::vector<Recorded> of_stream(device::StreamId s) const {
    std::vector<Recorded> out;
    for (const auto& e : events) {
      if (e.stream == s) out.push_back(e);
    }
    return out;
  }
  static std::string line(const Recorded& e) {
    return fmt::format("s{} c{} d{} {} tag{} [{}, {}] sms={} blocks=[{}, {}){}\n", e.stream,
                       e.context, e.bandwidth_domain, e.name, e.submission_tag, e.start, e.end,
                       e.sms, e.blocks.begin, e.blocks.end, e.yielded ? " yielded" : "");
  }
  std::string dump() const {
    std::string out;
    for (const auto& e : events) out += line(e);
    return out;
  }

  std::vector<Recorded> events;
};

// Runs one sequence on a fresh device with the stream configuration given; returns the time its
// submission finished (it is submitted at time 0).
inline core::Nanos run_alone(const hw::GpuSpec& spec, const sim::SimGpuOptions& options,
                             workload::KernelSequencePtr seq,
                             const device::StreamConfig& config = {}) {
  sim::Engine engine;
  sim::SimGpu gpu(engine, spec, options);
  const auto stream = gpu.create_stream(config);
  core::Nanos finished = -1;
  const auto st = gpu.submit(*stream, std::move(seq), 0,
                             [&](const device::SubmissionDone& d) { finished = d.finished; });
  if (!st) return -1;
  engine.run_until(core::kNever);
  return finished;
}

}  // namespace tessera::test
