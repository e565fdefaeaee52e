#pragma once
// A device::GpuDevice that forwards every call to another one. A test double that watches or
// changes a few calls of a real device derives from it and overrides only those.

#include <cstdint>
#include <utility>

#include "tessera/core/error.hpp"
#include "tessera/device/executor.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::test {

class ForwardingGpuDevice : public device::GpuDevice {
 public:
  explicit ForwardingGpuDevice(device::GpuDevice& inner) : inner_(inner) {}

  const hw::GpuSpec& spec() const override { return inner_.spec(); }
  device::Capabilities capabilities() const override { return inner_.capabilities(); }
  device::Executor& executor() override { return inner_.executor(); }

  core::Result<device::DomainId> create_bandwidth_domain(double share) override {
    return inner_.create_bandwidth_domain(share);
  }
  core::Result<device::StreamId> create_stream(const device::StreamConfig& config) override {
    return inner_.create_stream(config);
  }
  core::Status configure_stream(device::StreamId stream,
                                const device::StreamConfig& config) override {
    return inner_.configure_stream(stream, config);
  }
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override {
    return inner_.submit(stream, std::move(sequence), tag, std::move(done));
  }
  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override {
    return inner_.submit_range(stream, std::move(sequence), range, tag, std::move(done));
  }
  core::Status submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                           device::KernelSpan span, std::uint64_t tag,
                           device::DoneCallback done) override {
    return inner_.submit_span(stream, std::move(sequence), span, tag, std::move(done));
  }
  core::Status end_after_head(device::StreamId stream) override {
    return inner_.end_after_head(stream);
  }
  core::Status request_yield(device::StreamId stream) override {
    return inner_.request_yield(stream);
  }

  core::Status suspend_context(device::ContextId context) override {
    return inner_.suspend_context(context);
  }
  core::Status resume_context(device::ContextId context) override {
    return inner_.resume_context(context);
  }

  core::Status set_clock_mhz(double mhz) override { return inner_.set_clock_mhz(mhz); }
  double clock_mhz() const override { return inner_.clock_mhz(); }

  void add_observer(device::DeviceObserver* observer) override { inner_.add_observer(observer); }
  device::DeviceStats stats() const override { return inner_.stats(); }

 private:
  device::GpuDevice& inner_;
};

}  // namespace tessera::test
