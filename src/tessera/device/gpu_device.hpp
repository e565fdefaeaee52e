#pragma once
// The backend interface of one GPU. Sharing modes, the papers' schedulers among them, drive a
// GPU only through this, so they cannot tell the simulator (sim::SimGpu) from a real device.
//
// Work is submitted to streams as kernel sequences; kernels of one stream run in order, one at a
// time. A stream's configuration (which SMs, which bandwidth domain, which context) may be changed
// between kernels: the change applies from the next kernel that starts, never to a running one.

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/executor.hpp"
#include "tessera/device/sm_mask.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::device {

using StreamId = std::uint32_t;
using ContextId = std::uint32_t;
using DomainId = std::uint32_t;

inline constexpr DomainId kWholeDevice = 0;

// Thread blocks [begin, end) of a kernel's grid. A kernel launched whole runs [0, blocks).
struct BlockRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const BlockRange&) const = default;
};

// What a backend can do; policies check these and degrade cleanly where one is missing.
struct Capabilities {
  bool sm_partitions = false;         // a stream can be confined to an SM set
  bool sm_limit = false;              // a stream can be capped to N SMs (MPS active-thread %)
  bool bandwidth_partitions = false;  // memory bandwidth can be split into domains (MIG-like)
  bool context_preemption = false;    // a context's running kernels can be suspended and resumed
  bool clock_control = false;         // the graphics clock can be set
  // A launch can run a block range of a kernel's grid, with the kernel's own launch configuration
  // (LithOS's atoms: blocks outside the range exit at once).
  bool block_ranges = false;
  // A stream's running kernel that polls a preemption flag (workload::Kernel::checkpoints > 0) can
  // be asked to stop at its next checkpoint (CoGPU's resident control kernel).
  bool kernel_preemption = false;
  bool stream_priorities = false;  // StreamConfig::priority orders block dispatch
  // A stream's current submission can be ended after the kernels it has begun (end_after_head),
  // so a scheduler can hand over a span of many kernels and still move the rest at any boundary.
  bool early_end = false;
};

// `count` whole kernels of a sequence, from `from` on, in the order SequenceCursor walks them.
struct KernelSpan {
  workload::SequenceCursor from{};
  std::int64_t count = 0;
};

struct StreamConfig {
  ContextId context = 0;  // owner; time-slicing suspends and resumes whole contexts
  SmMask sms;             // SMs the stream's kernels may use; empty means all SMs
  int max_sms = 0;        // 0: no cap; otherwise at most this many SMs at once
  DomainId bandwidth_domain = kWholeDevice;
  // Block dispatch order: when SMs free up, kernels of higher-priority streams place blocks
  // first; running blocks are not preempted (cuStreamCreateWithPriority). 0 is the default;
  // higher is more urgent (CUDA numbers the other way round).
  int priority = 0;
};

// One finished kernel, as observers (metrics, timelines, invariant checkers) see it.
struct KernelEvent {
  StreamId stream;
  ContextId context;
  DomainId bandwidth_domain;
  const workload::Kernel* kernel;
  std::uint64_t submission_tag;
  core::Nanos start;
  core::Nanos end;
  int sms;              // SMs it held when it started
  BlockRange blocks{};  // the part of the grid this launch ran: all of it unless atomized
  // It stopped at a checkpoint on request (request_yield); the rest of its work runs in a later
  // launch of the same kernel, with the same launch configuration.
  bool yielded = false;
};

class DeviceObserver {
 public:
  virtual ~DeviceObserver() = default;
  virtual void on_kernel_complete(const KernelEvent& event) = 0;
  // Finished kernels in the order they finished; a device may deliver several at once (a run of
  // kernels timed together) so that an observer can check them in one pass.
  virtual void on_kernels_complete(std::span<const KernelEvent> events) {
    for (const auto& e : events) on_kernel_complete(e);
  }
};

struct SubmissionDone {
  StreamId stream;
  std::uint64_t tag;
  core::Nanos submitted;
  core::Nanos started;   // first kernel began
  core::Nanos finished;  // last kernel ended
  // Kernels it ran to their end: for a span (submit_span), fewer than it asked for when
  // end_after_head ended it early.
  std::int64_t kernels = 0;
};
using DoneCallback = std::function<void(const SubmissionDone&)>;

struct DeviceStats {
  core::Nanos elapsed = 0;
  double sm_busy_fraction = 0;  // SM-time held by kernels / (SMs x elapsed)
  double energy_joules = 0;
  double average_power_watts = 0;
  std::int64_t kernels_completed = 0;
};

class GpuDevice {
 public:
  virtual ~GpuDevice() = default;

  virtual const hw::GpuSpec& spec() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual Executor& executor() = 0;

  // Carves `share` (0, 1] of device bandwidth into a new domain; the whole-device domain keeps
  // what is left. Fails if the shares would exceed the device.
  virtual core::Result<DomainId> create_bandwidth_domain(double share) = 0;
  virtual core::Result<StreamId> create_stream(const StreamConfig& config) = 0;
  virtual core::Status configure_stream(StreamId stream, const StreamConfig& config) = 0;
  // Queues a sequence on a stream; `done` runs once its last kernel has finished.
  virtual core::Status submit(StreamId stream, workload::KernelSequencePtr sequence,
                              std::uint64_t tag, DoneCallback done) = 0;
  // Queues blocks `range` of the only kernel of `sequence` (one group, one kernel, repeat 1) as
  // one launch. The launch configuration is the kernel's own; only blocks in the range do work.
  // Needs Capabilities::block_ranges and a block-independent kernel; the range must be non-empty
  // and inside the grid.
  virtual core::Status submit_range(StreamId stream, workload::KernelSequencePtr sequence,
                                    BlockRange range, std::uint64_t tag, DoneCallback done) {
    (void)sequence, (void)range, (void)tag, (void)done;
    return unsupported(stream, "block-range launches");
  }
  // Queues `span` of `sequence` as one submission, run as if the sequence held only those kernels;
  // `done` reports how many ran (SubmissionDone::kernels). The span must be non-empty and inside
  // the sequence. This default submits a copy of the span's kernels; a backend that can run a
  // sequence from a position overrides it, so a resubmitted sequence is recognised as the same.
  virtual core::Status submit_span(StreamId stream, workload::KernelSequencePtr sequence,
                                   KernelSpan span, std::uint64_t tag, DoneCallback done);
  // Ends the stream's current submission after the kernels it has begun: the one at its head, and
  // on a backend that issues ahead of the GPU every one already issued. Its done callback runs when
  // they have finished, with SubmissionDone::kernels saying how many ran; the rest never runs.
  // Later submissions are unaffected and an idle stream is left alone. Needs
  // Capabilities::early_end.
  virtual core::Status end_after_head(StreamId stream) {
    return unsupported(stream, "ending a submission early");
  }
  // Asks the kernel now running on `stream` to stop at its next checkpoint. It gives its SMs back
  // there (reported as a KernelEvent with yielded = true) and the rest of its work stays at the
  // head of the stream, to run with the stream's configuration at that time. A kernel without
  // checkpoints runs to its end; an idle stream is left alone. Needs
  // Capabilities::kernel_preemption.
  virtual core::Status request_yield(StreamId stream) {
    return unsupported(stream, "kernel preemption");
  }

  // Context preemption: a suspended context's running kernels stop where they are and give their
  // SMs back; they continue from there after resume. Queued kernels wait.
  virtual core::Status suspend_context(ContextId context) = 0;
  virtual core::Status resume_context(ContextId context) = 0;

  virtual core::Status set_clock_mhz(double mhz) = 0;
  virtual double clock_mhz() const = 0;

  virtual void add_observer(DeviceObserver* observer) = 0;
  virtual DeviceStats stats() const = 0;

 protected:
  core::Status unsupported(StreamId stream, std::string_view what) const {
    return core::failf(core::Domain::kDevice, core::Code::kUnsupported,
                       "{} (stream {}) does not support {}; check capabilities() first",
                       spec().name, stream, what);
  }
};

}  // namespace tessera::device
