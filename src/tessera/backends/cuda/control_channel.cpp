#include "tessera/backends/cuda/control_channel.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "tessera/backends/cuda/driver_handles.hpp"
#include "tessera/backends/cuda/kernel_params.h"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {

namespace {

using core::Code;
using core::Domain;

// std::atomic_ref on the mailbox's fields: the kernel reads and writes them with system-scope
// atomics (cuda-api-facts.md section 6), so plain host accesses would be a data race.
std::uint32_t load_acquire(std::uint32_t& field) {
  return std::atomic_ref<std::uint32_t>(field).load(std::memory_order_acquire);
}

// The control kernel is queried (cuStreamQuery) once per this many mailbox reads while waiting:
// often enough to report a failed stream quickly, rarely enough that the driver call (about a
// microsecond) does not dominate a round trip measured in microseconds. ASSUMPTION: 256.
constexpr int kSpinsPerStreamQuery = 256;

bool seq_reached(std::uint32_t ack, std::uint32_t seq) {
  // Wrap-around order: ack is at or after seq when their difference is below 2^31.
  return static_cast<std::int32_t>(ack - seq) >= 0;
}

}  // namespace

struct ControlChannel::State {
  const DriverLibrary& driver;
  CUstream stream = nullptr;  // the caller's
  UniqueHostMemory box;       // the mailbox, mapped pinned host memory; freed after the flags
  UniqueDeviceMemory flags;
  int slots = 0;
  ControlChannelOptions options;
  std::mutex post_mutex;  // one command in the mailbox at a time
  std::uint32_t last_seq = 0;
  bool running = false;  // tessera_control was launched

  explicit State(const DriverLibrary& d) : driver(d) {}
  TesseraControlMailbox* mailbox() const { return static_cast<TesseraControlMailbox*>(box.get()); }
  core::Status wait(std::uint32_t seq, core::Nanos timeout) const;
  core::Result<std::uint32_t> post(TesseraControlOp op, int slot);
};

core::Status ControlChannel::State::wait(std::uint32_t seq, core::Nanos timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout);
  for (int spin = 0;; ++spin) {
    if (seq_reached(load_acquire(mailbox()->ack_seq), seq)) return {};
    if (spin % kSpinsPerStreamQuery != kSpinsPerStreamQuery - 1) continue;
    const CUresult r = driver.api().stream_query(stream);
    // A second look: the kernel may have acknowledged and returned (EXIT) since the last read.
    if (seq_reached(load_acquire(mailbox()->ack_seq), seq)) return {};
    if (r == CUDA_SUCCESS) {
      return core::failf(Domain::kCuda, Code::kFailedPrecondition,
                         "control command {} was not acknowledged: the control kernel is no "
                         "longer running (its stream is idle); restart the control channel",
                         seq);
    }
    if (r != CUDA_ERROR_NOT_READY) {
      auto st = driver.check(r, "cuStreamQuery(control kernel's stream)");
      return std::unexpected(st.error().with_context(
          fmt::format("control command {} was not acknowledged: the control kernel failed", seq)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return core::failf(Domain::kCuda, Code::kFailedPrecondition,
                         "control command {} was not acknowledged within {} us: the control "
                         "kernel is not running (its stream failed, or it was starved of an SM)",
                         seq, core::to_micros(timeout));
    }
    std::this_thread::yield();
  }
}

core::Result<std::uint32_t> ControlChannel::State::post(TesseraControlOp op, int slot) {
  std::lock_guard lock(post_mutex);
  // The mailbox holds one command: overwriting op and slot before the kernel acknowledged the
  // previous one could pair the previous seq with the new command.
  TESSERA_TRY(wait(last_seq, options.ack_timeout));
  const std::uint32_t seq = last_seq + 1;
  TesseraControlMailbox* const box = mailbox();
  std::atomic_ref<std::uint32_t>(box->op).store(op, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(box->slot).store(static_cast<std::uint32_t>(slot),
                                                  std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(box->seq).store(seq, std::memory_order_release);
  last_seq = seq;
  return seq;
}

core::Result<std::unique_ptr<ControlChannel>> ControlChannel::start(
    const DriverLibrary& driver, KernelModule& kernels, CUstream stream,
    const ControlChannelOptions& options) {
  if (options.slots < 1) {
    return core::failf(Domain::kCuda, Code::kInvalidArgument,
                       "a control channel needs at least one yield slot, got {}", options.slots);
  }
  if (options.poll_ns < 0 || options.ack_timeout <= 0) {
    return core::failf(Domain::kCuda, Code::kInvalidArgument,
                       "control channel: poll_ns ({}) must be >= 0 and ack_timeout ({} ns) > 0",
                       options.poll_ns, options.ack_timeout);
  }
  auto state = std::make_unique<State>(driver);
  state->stream = stream;
  state->slots = options.slots;
  state->options = options;
  const DriverApi& api = driver.api();
  // On failure `state` frees what was allocated.
  const auto fail = [](core::Status st) { return std::unexpected(std::move(st).error()); };

  void* host = nullptr;
  if (auto st = driver.check(
          api.mem_host_alloc(&host, sizeof(TesseraControlMailbox), CU_MEMHOSTALLOC_DEVICEMAP),
          "cuMemHostAlloc(control mailbox, DEVICEMAP)");
      !st) {
    return fail(st);
  }
  state->box = UniqueHostMemory(driver, host);
  std::memset(host, 0, sizeof(TesseraControlMailbox));
  CUdeviceptr box_device = 0;
  if (auto st = driver.check(api.mem_host_get_device_pointer(&box_device, host, 0),
                             "cuMemHostGetDevicePointer(control mailbox)");
      !st) {
    return fail(st);
  }
  const std::size_t flag_bytes = sizeof(std::uint32_t) * static_cast<std::size_t>(options.slots);
  CUdeviceptr flags = 0;
  if (auto st = driver.check(api.mem_alloc(&flags, flag_bytes), "cuMemAlloc(yield flags)"); !st) {
    return fail(st);
  }
  state->flags = UniqueDeviceMemory(driver, flags);
  if (auto st = driver.check(api.memset_d8(flags, 0, flag_bytes), "cuMemsetD8(yield flags)"); !st) {
    return fail(st);
  }
  TesseraControlParams params{};
  params.mailbox = box_device;
  params.yield_flags = flags;
  params.slots = static_cast<std::uint32_t>(options.slots);
  params.poll_ns = static_cast<std::uint32_t>(options.poll_ns);
  if (auto st = kernels.launch(TESSERA_KERNEL_CONTROL, 1, 1, 0, stream, params); !st) {
    return fail(st);
  }
  state->running = true;
  return std::unique_ptr<ControlChannel>(new ControlChannel(std::move(state)));
}

ControlChannel::ControlChannel(std::unique_ptr<State> state) : state_(std::move(state)) {}

ControlChannel::~ControlChannel() {
  State& s = *state_;
  if (s.running) {
    auto seq = s.post(TESSERA_CONTROL_EXIT, 0);
    const core::Status acked =
        seq ? s.wait(*seq, s.options.ack_timeout) : core::Status(std::unexpected(seq.error()));
    // A control kernel that is gone (its stream idle) reads nothing any more: free its buffers.
    if (!acked && s.driver.api().stream_query(s.stream) != CUDA_SUCCESS) {
      core::logger().error(
          "stopping the control kernel: {}; its mailbox and yield flags stay allocated",
          acked.error().message());
      s.flags.release();
      s.box.release();
      return;
    }
    if (auto st = s.driver.check(s.driver.api().stream_synchronize(s.stream),
                                 "cuStreamSynchronize(control kernel's stream)");
        !st) {
      core::logger().error("stopping the control kernel: {}", st.error().message());
    }
  }
  s.flags.reset();
  s.box.reset();
}

CUdeviceptr ControlChannel::yield_flag(int slot) const {
  return state_->flags.get() + sizeof(std::uint32_t) * static_cast<CUdeviceptr>(slot);
}

int ControlChannel::slots() const {
  return state_->slots;
}

core::Result<std::uint32_t> ControlChannel::request_yield(int slot) {
  if (slot < 0 || slot >= state_->slots) {
    return core::failf(Domain::kCuda, Code::kInvalidArgument,
                       "yield slot {} is outside the control channel's slots [0, {})", slot,
                       state_->slots);
  }
  return state_->post(TESSERA_CONTROL_YIELD, slot);
}

core::Result<std::uint32_t> ControlChannel::clear(int slot) {
  if (slot < 0 || slot >= state_->slots) {
    return core::failf(Domain::kCuda, Code::kInvalidArgument,
                       "yield slot {} is outside the control channel's slots [0, {})", slot,
                       state_->slots);
  }
  return state_->post(TESSERA_CONTROL_CLEAR, slot);
}

bool ControlChannel::acknowledged(std::uint32_t seq) const {
  return seq_reached(load_acquire(state_->mailbox()->ack_seq), seq);
}

core::Status ControlChannel::wait_acknowledged(std::uint32_t seq, core::Nanos timeout) const {
  return state_->wait(seq, timeout);
}

std::uint64_t ControlChannel::last_ack_gpu_time_ns() const {
  // The kernel writes the time before its release store of ack_seq: acquiring ack_seq first
  // gives a time at least as new as the acknowledgement read.
  TesseraControlMailbox* const box = state_->mailbox();
  static_cast<void>(load_acquire(box->ack_seq));
  return std::atomic_ref<std::uint64_t>(box->ack_time_ns).load(std::memory_order_relaxed);
}

}  // namespace tessera::cuda
