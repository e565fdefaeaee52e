#pragma once
// CudaGpu's private state, shared by its source files (cuda_gpu.cpp: creation, teardown and the
// GpuDevice calls; cuda_gpu_contexts.cpp: granule sets and the green-context cache;
// cuda_gpu_issue.cpp: launches; cuda_gpu_poll.cpp: completions, yields and run_until). Not part
// of the public interface.

#include <cuda.h>

#include <bitset>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/backends/cuda/control_channel.hpp"
#include "tessera/backends/cuda/cuda_gpu.hpp"
#include "tessera/backends/cuda/driver_handles.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/green_partitions.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/backends/nvml/nvml_gpu_control.hpp"

namespace tessera::cuda {

// Bit g: granule g. A granule holds at least one SM, so there are never more than kMaxSms.
using GranuleSet = std::bitset<device::kMaxSms>;

using workload::SequenceCursor;

// Where a stream's kernels run: the primary context (the whole GPU) or a green context over a set
// of granules. Each device stream gets its own CUstream here, created on first use.
// Declared in the order the driver needs them gone, last first: the green context outlives the
// streams and the reference event made in it.
struct ExecutionContext {
  bool primary = false;
  GranuleSet granules;
  GreenPartition green;  // empty for the primary context
  CUcontext context = nullptr;
  int sms = 0;  // read back from the driver
  std::map<device::StreamId, UniqueStream> streams;
  std::uint64_t last_used = 0;
  // An event recorded and synchronised in this context when it got its first CUstream, and the
  // executor time read then: launches are timed against events of their own context only (no
  // cuEventElapsedTime across contexts, which the driver's documentation does not promise).
  UniqueEvent reference;
  core::Nanos reference_time = 0;
  int launches_in_flight = 0;
  int live_events = 0;  // launch events created in this context and not yet destroyed
};

// An event and the context it belongs to, not owned.
struct EventRef {
  CUevent event = nullptr;
  const ExecutionContext* owner = nullptr;
};

// A launch event, owned, counted in its context's live_events while it lives (a context with live
// events is not evicted from the cache: events are destroyed before their context).
class OwnedEvent {
 public:
  OwnedEvent() = default;
  OwnedEvent(UniqueEvent event, ExecutionContext& owner)
      : event_(std::move(event)), owner_(&owner) {
    ++owner_->live_events;
  }
  ~OwnedEvent() { reset(); }
  OwnedEvent(OwnedEvent&& other) noexcept
      : event_(std::move(other.event_)), owner_(std::exchange(other.owner_, nullptr)) {}
  OwnedEvent& operator=(OwnedEvent&& other) noexcept {
    if (this != &other) {
      reset();
      event_ = std::move(other.event_);
      owner_ = std::exchange(other.owner_, nullptr);
    }
    return *this;
  }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;

  CUevent get() const { return event_.get(); }
  EventRef ref() const { return {.event = event_.get(), .owner = owner_}; }
  void reset() {
    if (owner_ == nullptr) return;
    event_.reset();
    --std::exchange(owner_, nullptr)->live_events;
  }

 private:
  UniqueEvent event_;
  ExecutionContext* owner_ = nullptr;
};

struct Submission {
  workload::KernelSequencePtr sequence;
  device::BlockRange range;  // size 0: whole kernels; otherwise blocks of its only kernel
  std::uint64_t tag = 0;
  device::DoneCallback done;
  core::Nanos submitted = 0;
  core::Nanos started = -1;
  SequenceCursor next;       // the next kernel to issue (a span's first kernel at the start)
  std::int64_t left = 0;     // kernels still to issue; 0 once its last is issued or it was ended
  std::int64_t kernels = 0;  // kernels it ran to their end (a yielded one once, when it ends)
};

// One launch on the GPU.
struct Launch {
  std::shared_ptr<Submission> submission;
  const workload::Kernel* kernel = nullptr;
  SequenceCursor cursor;
  device::BlockRange blocks;
  device::ContextId context = 0;
  ExecutionContext* where = nullptr;
  OwnedEvent start;
  // Owned by the stream (StreamState::last_end) until the next launch takes it as its previous.
  EventRef end;
  // The previous launch's end event on the same device stream: waited on across a remap and the
  // origin of this launch's times; owned by this launch (destroyed when it is delivered).
  OwnedEvent previous;
  bool last_of_submission = false;
  bool yieldable = false;  // tessera_emulate with checkpoints, on a stream with a yield flag
  bool relaunch = false;   // the rest of a yielded launch
  core::Nanos issued = 0;  // executor time the host launched it: it cannot have started before
};

// A completed launch, timed, waiting to be delivered.
struct Completion {
  device::StreamId stream = 0;
  Launch launch;
  core::Nanos start = 0;
  core::Nanos end = 0;
  bool yielded = false;
  std::uint64_t order = 0;  // completion order, the last tie-breaker
};

struct StreamState {
  device::StreamConfig config;
  std::deque<std::shared_ptr<Submission>> queue;  // submissions with kernels not yet issued
  // The sequence last validated: spans of one sequence, submitted again and again, are
  // validated once.
  workload::KernelSequencePtr validated;
  std::deque<Launch> in_flight;      // issued, not delivered, in issue order
  std::optional<Launch> rest;        // a yielded launch to run again, at the head
  OwnedEvent last_end;               // the last issued launch's end event, until the next takes it
  CUstream last_custream = nullptr;  // the CUstream it was recorded on
  core::Nanos last_end_time = -1;    // executor time of the last delivered launch's end
  // Yields (one checkpointed launch in flight at a time, so one of each suffices).
  int slot = -1;  // the control channel's yield flag for this stream; -1: none
  bool flag_raised = false;
  bool yield_rest = false;  // asked to yield while the rest waited: stop it at its next checkpoint
  std::optional<std::uint32_t> clear_seq;  // a CLEAR posted and not yet acknowledged
};

struct CudaGpu::Impl {
  const DriverLibrary& driver;
  const DriverApi& api;
  device::WallClockExecutor& executor;
  CudaGpuOptions options;
  DriverDevice device;
  hw::GpuSpec spec;
  core::Nanos created = 0;

  // The owners below are released by teardown(), in the order the driver needs.
  CUcontext primary = nullptr;
  RetainedPrimaryContext primary_retained;
  std::unique_ptr<KernelModule> kernels;
  UniqueDeviceMemory scratch;
  UniqueDeviceMemory sink;
  // Per yield slot, allocated before the control kernel is resident (allocations and frees may
  // wait for running kernels, and the control kernel never ends on its own): a progress buffer of
  // max_checkpointed_blocks, a mapped counter of blocks that stopped early, and pinned zeros to
  // reset a progress buffer in stream order.
  UniqueDeviceMemory progress_pool;
  UniqueHostMemory yielded_host;
  CUdeviceptr yielded_device = 0;
  UniqueHostMemory zeros;
  std::uint32_t& yielded_blocks(int slot) const {
    return static_cast<std::uint32_t*>(yielded_host.get())[slot];
  }

  // Granules and the contexts made from them.
  std::optional<SmGranules> granules;
  std::unique_ptr<ExecutionContext> primary_context;
  std::vector<std::unique_ptr<ExecutionContext>> green_contexts;  // the cache
  std::uint64_t use_clock = 0;
  std::optional<GreenPartition> control_partition;  // the split's remainder, if any
  UniqueStream own_control_stream;    // the control kernel's stream without control_partition
  CUstream control_stream = nullptr;  // control_partition's stream or own_control_stream
  std::unique_ptr<ControlChannel> control;

  UniqueStream utility_stream;  // primary context: records its reference event

  std::vector<StreamState> streams;
  std::map<std::string, Payload, std::less<>> payloads;
  std::vector<device::DeviceObserver*> observers;
  std::optional<core::Error> error;  // the first CUDA error: every later call returns it
  std::uint64_t completion_order = 0;
  bool delivering = false;

  // Stats.
  std::int64_t kernels_completed = 0;
  double sm_ns = 0;
  std::unique_ptr<NvmlGpuControl> nvml;
  std::optional<double> energy_at_creation;
  std::optional<int> locked_clock;

  Impl(const DriverLibrary& d, device::WallClockExecutor& e, const CudaGpuOptions& o)
      : driver(d), api(d.api()), executor(e), options(o) {}

  // --- cuda_gpu.cpp ---
  core::Status init();
  void teardown();
  core::Status check(CUresult r, std::string_view call);  // records the first error
  core::Status fail_with(core::Error e);
  core::Status usable() const;
  core::Status check_stream(device::StreamId stream) const;
  core::Status check_config(const device::StreamConfig& config) const;
  // Queues `count` kernels of `sequence` from `from` (a block range: its one kernel).
  core::Status enqueue(device::StreamId stream, workload::KernelSequencePtr sequence,
                       SequenceCursor from, std::int64_t count, device::BlockRange range,
                       std::uint64_t tag, device::DoneCallback done);
  core::Status end_after_head(device::StreamId stream);
  bool idle() const;
  core::Status raise_yield_flag(device::StreamId stream);

  // --- cuda_gpu_contexts.cpp ---
  core::Status make_granules();
  // The granules `mask` maps to (empty: the primary context).
  GranuleSet granules_for(const device::SmMask& mask) const;
  core::Result<ExecutionContext*> context_for(const GranuleSet& set);
  core::Result<CUstream> custream_for(ExecutionContext& where, device::StreamId stream);
  core::Result<OwnedEvent> create_event(ExecutionContext& where);
  void destroy_context(ExecutionContext& c);

  // --- cuda_gpu_issue.cpp ---
  void issue(device::StreamId stream);
  void issue_all();
  core::Status launch(device::StreamId stream, Launch l);
  core::Status launch_emulation(StreamState& st, const Launch& l, CUstream cu);
  core::Status prepare_yield_buffers(StreamState& st, const Launch& l, CUstream cu);
  CUdeviceptr progress_of(const StreamState& st) const {
    return progress_pool.get() + static_cast<CUdeviceptr>(st.slot) *
                                     static_cast<CUdeviceptr>(options.max_checkpointed_blocks) * 4;
  }

  // --- cuda_gpu_poll.cpp ---
  core::Status poll();
  core::Status collect(device::StreamId stream, std::vector<Completion>& out);
  core::Result<core::Nanos> event_time(const ExecutionContext& where, const EventRef& from,
                                       core::Nanos from_time, const EventRef& to);
  void deliver(Completion& c);
};

}  // namespace tessera::cuda
