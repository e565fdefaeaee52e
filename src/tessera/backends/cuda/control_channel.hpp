#pragma once
// CoGPU's resident control kernel on a real GPU: one single-thread kernel (tessera_control) per
// physical context, resident on a stream of its own in that context, polling a mailbox in mapped
// pinned host memory with system-scope acquire loads. The host asks it to raise or clear a yield
// flag in device memory; persistent best-effort kernels (tessera_emulate with checkpoints) poll
// that flag at their checkpoints, so the request reaches them without a host round trip per block
// and without polling host memory from every block. Layouts: kernel_params.h.
//
// The control kernel occupies one block's worth of SM resources in its partition for as long as
// the channel lives; CudaGpu budgets for it. Streams that must not serialise behind it need
// CUDA_DEVICE_MAX_CONNECTIONS >= the streams in use (set before cuInit; CudaGpu does).

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::cuda {

struct ControlChannelOptions {
  int slots = 64;     // yield flags, one per stream that may run yieldable kernels
  int poll_ns = 500;  // __nanosleep between the control kernel's polls. ASSUMPTION: 0.5 us
                      // keeps the request latency well under a kernel's checkpoint interval
                      // while leaving the SM's issue slots to the partition's real work.
  // How long posting a command waits for the previous one's acknowledgement (the mailbox holds
  // one command), and how long the destructor waits for EXIT's. ASSUMPTION: 1 s; a running
  // control kernel answers within microseconds, so only a dead or starved one takes this long.
  core::Nanos ack_timeout = core::kNanosPerSecond;
};

class ControlChannel {
 public:
  // Allocates the mailbox (cuMemHostAlloc, DEVICEMAP; not write-combined: the host reads the
  // acknowledgement) and the device flags (zeroed), and launches tessera_control on `stream`
  // (a stream of the physical context it serves). The caller's context must be current.
  static core::Result<std::unique_ptr<ControlChannel>> start(
      const DriverLibrary& driver, KernelModule& kernels, CUstream stream,
      const ControlChannelOptions& options = {});
  // Sends EXIT, waits for its acknowledgement and the control kernel's stream to drain, frees the
  // buffers. If EXIT is not acknowledged within ack_timeout while the kernel's stream is still
  // busy, the buffers are left allocated (a kernel that may still poll them must not read freed
  // memory) and the error is logged.
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Device address of slot `slot`'s yield flag, for TesseraEmulateParams::yield_flag.
  CUdeviceptr yield_flag(int slot) const;
  int slots() const;

  // Posts a command and returns its sequence number (1, 2, ...; it wraps after 2^32). The mailbox
  // holds one command: posting waits (up to ack_timeout) only while the previous command is not
  // yet acknowledged, which a running control kernel does within its poll interval.
  // kInvalidArgument for a slot outside [0, slots()).
  core::Result<std::uint32_t> request_yield(int slot);
  core::Result<std::uint32_t> clear(int slot);
  // True once the control kernel acknowledged command `seq` (reads the mailbox; never blocks).
  bool acknowledged(std::uint32_t seq) const;
  // Spins (bounded by `timeout`) until `seq` is acknowledged; kFailedPrecondition on timeout,
  // naming the sequence number (the control kernel is not running: its stream failed or it was
  // starved of an SM). While waiting it queries the control kernel's stream (cuStreamQuery) now
  // and then, so a control kernel that failed or returned is reported at once with its error.
  core::Status wait_acknowledged(std::uint32_t seq, core::Nanos timeout) const;
  // The GPU's %globaltimer (ns) when the control kernel handled the last acknowledged command.
  std::uint64_t last_ack_gpu_time_ns() const;

 private:
  struct State;
  explicit ControlChannel(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tessera::cuda
