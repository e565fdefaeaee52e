#pragma once
// device::GpuDevice on a real NVIDIA GPU through the CUDA driver API, so that the sharing modes
// (lithos, cogpu, tpot-first and the baselines) drive real hardware unchanged.
//
// Physical contexts. At creation the device's SMs are split, in one cuDevSmResourceSplitByCount
// call, into equal granules of the driver's minimum partition size (8 SMs on Hopper, 4 on Ampere;
// read from the device, never assumed). SM resources from one split call may be combined into one
// descriptor, so any set of granules can become one green context. A stream's SmMask is read in a
// virtual numbering (granule g holds SMs [g * G, (g + 1) * G)) and maps to the granules it covers
// completely (a mask covering no granule completely gets the granule it overlaps most, and the
// mapping says so in its log; an empty mask, or one naming every SM, runs in the primary
// context). The green context for each granule set is created on first use and cached (the least
// recently used idle one is destroyed when the cache is full). Disjoint masks thus run on
// disjoint SMs, whatever the policy plans. The SMs the split leaves over hold the resident control
// kernel. Without green contexts (driver older than 12.4) every stream runs in the primary context
// and Capabilities::sm_partitions is false.
//
// Virtual contexts. A StreamId is a tenant's ordered kernel stream. Its kernels are issued to a
// CUstream of the context its configuration names (one CUstream per stream and context, so
// tenants never serialise behind each other). When the configuration changes, the next kernel
// goes to the new context's stream after a cuStreamWaitEvent on the event recorded after the
// previous kernel: a remap between two kernels needs no copy (all green contexts share the
// device's memory) and never reorders. At most `issue_window` kernels of a stream are issued
// ahead of the GPU; a reconfiguration applies from the first kernel not yet issued. A span
// (submit_span) walks the submitted sequence in place from its first kernel, so a scheduler can
// hand over many kernels at once; end_after_head ends a submission after the kernels already
// issued (at least its head kernel), since an issued kernel cannot be taken back from the GPU.
//
// Kernels. A workload::Kernel runs as tessera_emulate (emulation.hpp) with its launch
// configuration, unless a payload is bound to its name (bind_payload): then the payload's real
// kernels run instead (the determinism harness binds the decode step's GEMM, softmax and argmax
// this way). Block ranges (submit_range) launch exactly the range's blocks with the range's
// offset. request_yield asks the control kernel to raise the stream's yield flag; kernels with
// checkpoints stop at the next one. A checkpointed kernel is issued alone (nothing of its stream
// behind it), so that if it yields, its rest runs next: relaunched at the head of the stream, under
// the stream's configuration then, once the flag is cleared.
//
// Time. Kernel start and end times come from CUDA events on the GPU's timeline, placed on the
// executor's clock by a reference event per context, recorded and synchronised when the context
// gets its first CUstream (a stream's later kernels in the same context are timed from its
// previous kernel's end event, which keeps cuEventElapsedTime's float short; no elapsed time is
// taken across contexts). Completions are found by polling events in poll(); callbacks and
// observers run there, on the caller's thread, in order of (end time, stream). run_until drives
// executor and device together (WallClockExecutor::run_due + poll). The first CUDA error poisons
// the device: every later call returns it, naming the call.

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/device/wall_clock_executor.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::cuda {

class NvmlLibrary;

struct CudaGpuOptions {
  int device_ordinal = 0;
  // The catalog entry the policies plan with. Empty: the catalog GPU whose name the driver's
  // device name contains (its SM count and memory replaced by the driver's); an unknown GPU is an
  // error that names it and asks for this option.
  std::string gpu_spec;
  // Kernels of one stream issued ahead of the GPU. ASSUMPTION: 2 hides the host's issue latency
  // between back-to-back kernels while a reconfiguration still applies within one kernel.
  int issue_window = 2;
  // Scratch buffer for tessera_emulate's DRAM traffic. ASSUMPTION: 1 GiB, at least 8x the L2 of
  // every catalog GPU (H100/H200: 50 MiB), so emulated traffic reaches DRAM.
  std::int64_t scratch_bytes = std::int64_t{1} << 30;
  // Green contexts cached per granule set before the least recently used idle one is destroyed.
  // ASSUMPTION: 32; the policies use a few masks each (CoGPU: partitions and their unions, LithOS:
  // TPC sets), and an idle green context costs only driver memory.
  int max_green_contexts = 32;
  // Streams that can be asked to yield: one flag each in the control channel (streams created
  // beyond this run their kernels to the end). ASSUMPTION: 256, far above any scenario's tenants.
  int yield_slots = 256;
  // Blocks of the largest kernel with checkpoints that can yield (a larger one runs to its end).
  // ASSUMPTION: 65536, above the grids of the catalog's persistent kernels (a few per SM); the
  // progress buffers take yield_slots x this x 4 bytes (64 MiB).
  std::int64_t max_checkpointed_blocks = 65536;
  // NVML for clocks and energy (not owned; may be null: then clock_control is false and energy 0).
  const NvmlLibrary* nvml = nullptr;
};

// A real computation that replaces tessera_emulate for kernels of one name. It must enqueue its
// work on `stream` only (no synchronisation, no other stream), with `context` current.
struct PayloadLaunch {
  CUstream stream = nullptr;
  CUcontext context = nullptr;
  int partition_sms = 0;  // SMs of the green context the launch runs in
  device::StreamId device_stream = 0;
  std::uint64_t submission_tag = 0;
  device::BlockRange blocks{};  // the whole grid unless the launch is an atom
};
using Payload = std::function<core::Status(const PayloadLaunch&)>;

// The longest a loop driving CudaGpus sleeps between polls. ASSUMPTION: 20 us, below the
// shortest kernels worth scheduling.
inline constexpr core::Nanos kPollInterval = core::micros(20);

class CudaGpu final : public device::GpuDevice {
 public:
  // Opens device `options.device_ordinal` on `driver` (which must outlive the device), loads the
  // embedded kernels, makes the granules and starts the control kernel. `executor` must be the
  // executor the caller drives (run_until does).
  static core::Result<std::unique_ptr<CudaGpu>> create(const DriverLibrary& driver,
                                                       device::WallClockExecutor& executor,
                                                       const CudaGpuOptions& options = {});
  ~CudaGpu() override;  // waits for the GPU to drain, stops the control kernel, frees everything

  const hw::GpuSpec& spec() const override;
  device::Capabilities capabilities() const override;
  device::Executor& executor() override;
  core::Result<device::DomainId> create_bandwidth_domain(double share) override;
  core::Result<device::StreamId> create_stream(const device::StreamConfig& config) override;
  core::Status configure_stream(device::StreamId stream,
                                const device::StreamConfig& config) override;
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override;
  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override;
  core::Status submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                           device::KernelSpan span, std::uint64_t tag,
                           device::DoneCallback done) override;
  core::Status end_after_head(device::StreamId stream) override;
  core::Status request_yield(device::StreamId stream) override;
  core::Status suspend_context(device::ContextId context) override;
  core::Status resume_context(device::ContextId context) override;
  core::Status set_clock_mhz(double mhz) override;
  double clock_mhz() const override;
  void add_observer(device::DeviceObserver* observer) override;
  device::DeviceStats stats() const override;

  // Kernels named `kernel_name` run `payload` instead of the emulation kernel.
  void bind_payload(std::string kernel_name, Payload payload);

  // Checks issued work for completions (cuEventQuery), fires observers and done callbacks in
  // order of end time, issues what the window allows. Returns the first CUDA error seen (a failed
  // kernel poisons the device: every later call returns it).
  core::Status poll();
  // Drives executor timers and poll() until `deadline` (executor time) or, with
  // `stop_when_idle`, until no timer is pending and no work is in flight. Sleeps between polls
  // (at most kPollInterval).
  core::Status run_until(core::Nanos deadline, bool stop_when_idle = true);

  // SM count of the green context `stream` would run its next kernel in (its configuration's
  // granules), for tests and reports.
  core::Result<int> partition_sms(device::StreamId stream) const;
  // Granules: SMs per granule and how many the split gave.
  int granule_sms() const;
  int granules() const;

 private:
  struct Impl;
  explicit CudaGpu(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cuda
