#include "tessera/gpu/modes/time_slicing/time_slicing.hpp"

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

TimeSlicingMode::~TimeSlicingMode() {
  // Timers hold `this`; the executor may outlive the mode, and the device may be gone already
  // (SharingMode's lifetime contract).
  cancel_timer(slice_timer_);
  cancel_timer(switch_timer_);
}

core::Status TimeSlicingMode::attach(device::GpuDevice& device,
                                     std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  if (!device.capabilities().context_preemption) {
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "time-slicing needs a device that can suspend and resume contexts, and {} "
                       "cannot; choose mps or static-partitions on this device",
                       device.spec().name);
  }
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  std::vector<Context> contexts;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const device::StreamConfig config{.context = context_for(i),
                                      .sms = {},  // every SM: slices share time, not space
                                      .max_sms = 0,
                                      .bandwidth_domain = device::kWholeDevice,
                                      .priority = 0};
    TESSERA_ASSIGN_OR_RETURN(const auto stream, device.create_stream(config));
    contexts.push_back(Context{.stream = stream, .id = config.context});
  }
  // Every context waits off the GPU until it has work and its turn.
  for (const auto& c : contexts) TESSERA_TRY(device.suspend_context(c.id));
  tenants_ = std::move(table);
  contexts_ = std::move(contexts);
  device_ = &device;
  executor_ = &device.executor();
  return {};
}

core::Status TimeSlicingMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                     std::uint64_t tag, device::DoneCallback done) {
  TESSERA_ASSIGN_OR_RETURN(const auto index, tenants_.index_of(name(), tenant));
  if (fault_) return std::unexpected(*fault_);
  auto& ctx = contexts_[index];
  ++ctx.pending;
  auto status =
      device_->submit(ctx.stream, std::move(sequence), tag,
                      [this, index, done = std::move(done)](const device::SubmissionDone& d) {
                        --contexts_[index].pending;
                        if (done) done(d);
                        // After the tenant's callback, which may already have submitted its next
                        // piece of work.
                        reschedule();
                      });
  if (!status) {
    --ctx.pending;
    return status;
  }
  reschedule();
  return {};
}

std::vector<PartitionInfo> TimeSlicingMode::partitions() const {
  if (device_ == nullptr) return {};
  return {PartitionInfo{.name = "gpu",
                        .sms = device::SmMask::first(device_->spec().sms),
                        .bandwidth_domain = device::kWholeDevice,
                        .tenants = tenants_.ids()}};
}

void TimeSlicingMode::reschedule() {
  if (switching_) return;
  if (!holder_) {
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
      if (contexts_[i].pending == 0) continue;
      holder_ = i;
      slice_start_ = executor_->now();
      note_fault(device_->resume_context(contexts_[i].id));
      break;
    }
    if (!holder_) return;
  }
  const std::size_t h = *holder_;
  const auto other = next_pending_after(h);
  if (contexts_[h].pending == 0) {
    if (other) {
      begin_switch(*other);
    } else {
      cancel_timer(slice_timer_);  // alone and idle: keep the GPU, no slice to end
    }
    return;
  }
  if (other && !slice_timer_) arm_slice_timer();
}

std::optional<std::size_t> TimeSlicingMode::next_pending_after(std::size_t index) const {
  const std::size_t n = contexts_.size();
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t j = (index + k) % n;
    if (contexts_[j].pending > 0) return j;
  }
  return std::nullopt;
}

void TimeSlicingMode::arm_slice_timer() {
  const core::Nanos elapsed = executor_->now() - slice_start_;
  const core::Nanos boundary =
      slice_start_ + (elapsed / options_.time_slice + 1) * options_.time_slice;
  slice_timer_ = executor_->schedule_at(boundary, [this] { on_slice_end(); });
}

void TimeSlicingMode::on_slice_end() {
  slice_timer_.reset();
  if (switching_ || !holder_) return;
  if (const auto other = next_pending_after(*holder_)) begin_switch(*other);
}

void TimeSlicingMode::begin_switch(std::size_t to) {
  cancel_timer(slice_timer_);
  note_fault(device_->suspend_context(contexts_[*holder_].id));
  holder_.reset();
  switching_ = true;
  ++switches_;
  switch_timer_ =
      executor_->schedule_after(options_.context_switch, [this, to] { finish_switch(to); });
}

void TimeSlicingMode::finish_switch(std::size_t to) {
  switch_timer_.reset();
  switching_ = false;
  holder_ = to;
  slice_start_ = executor_->now();
  note_fault(device_->resume_context(contexts_[to].id));
  reschedule();
}

void TimeSlicingMode::cancel_timer(std::optional<device::TimerId>& timer) {
  if (timer && executor_ != nullptr) executor_->cancel(*timer);
  timer.reset();
}

void TimeSlicingMode::note_fault(core::Status status) {
  if (status || fault_) return;
  core::logger().error("time-slicing: {}", status.error().message());
  fault_ = status.error().with_context("time-slicing could not switch contexts");
}

}  // namespace tessera::gpu
