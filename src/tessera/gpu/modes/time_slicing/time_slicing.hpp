#pragma once
// "time-slicing": the driver's default when several processes use one GPU. Each tenant has its own
// context on all SMs, and one context runs at a time. Contexts with pending work take turns in
// round-robin slices of TimeSlicingOptions::time_slice; at a slice end the running context is
// suspended (compute preemption) and, after TimeSlicingOptions::context_switch during which nothing
// runs, the next context with pending work is resumed. A context that runs out of work gives up the
// GPU at once (the driver skips idle contexts), and a context with no competitor keeps the GPU
// without switching.
//
// Model assumptions (not documented by NVIDIA): slices are counted from the moment a context got
// the GPU, so a context that ran alone is preempted at its next slice boundary once another
// context has work; loading the first context onto an idle GPU costs nothing, every later change
// of context costs one context_switch.

#include <optional>
#include <vector>

#include "tessera/device/executor.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/modes/time_slicing/time_slicing_options.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

class TimeSlicingMode final : public SharingMode {
 public:
  explicit TimeSlicingMode(const TimeSlicingOptions& options) : options_(options) {}
  ~TimeSlicingMode() override;
  TimeSlicingMode(const TimeSlicingMode&) = delete;
  TimeSlicingMode& operator=(const TimeSlicingMode&) = delete;

  std::string_view name() const override { return "time-slicing"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override;
  const TimeSlicingOptions& options() const { return options_; }

  // Context switches paid so far (the first load of an idle GPU is not one).
  std::int64_t context_switches() const { return switches_; }

 private:
  struct Context {
    device::StreamId stream;
    device::ContextId id;
    int pending = 0;  // submissions not finished yet
  };

  void on_done(std::size_t index);
  void reschedule();
  std::optional<std::size_t> next_pending_after(std::size_t index) const;
  void begin_switch(std::size_t to);
  void finish_switch(std::size_t to);
  void arm_slice_timer();
  void on_slice_end();
  void cancel_timer(std::optional<device::TimerId>& timer);
  void note_fault(core::Status status);

  TimeSlicingOptions options_;
  device::GpuDevice* device_ = nullptr;
  // device.executor(), which outlives the device: the timers live there.
  device::Executor* executor_ = nullptr;
  TenantTable tenants_;
  std::vector<Context> contexts_;  // per tenant, in attach order

  std::optional<std::size_t> holder_;  // the context loaded on the GPU (resumed), if any
  bool switching_ = false;             // a switch is in progress; no context is resumed
  core::Nanos slice_start_ = 0;        // when the holder got the GPU
  std::optional<device::TimerId> slice_timer_;
  std::optional<device::TimerId> switch_timer_;
  std::int64_t switches_ = 0;
  // A suspend/resume the device refused inside a callback; later submissions report it.
  std::optional<core::Error> fault_;
};

}  // namespace tessera::gpu
