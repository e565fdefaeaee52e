// SharingMode's lifetime contract (sharing_mode.hpp), for every registered mode: destroyed with
// work in flight and timers due, before or after its device, it leaves nothing on the executor,
// and after its device it makes no device calls.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/mode_test_util.hpp"
#include "support/fakes/forwarding_gpu_device.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::gpu {
namespace {

// Forwards to a device until gone(); from then on it stands for a destroyed device, and any call
// fails the test.
class VanishingDevice final : public test::ForwardingGpuDevice {
 public:
  using ForwardingGpuDevice::ForwardingGpuDevice;
  void gone() { gone_ = true; }

  const hw::GpuSpec& spec() const override { return check("spec").ForwardingGpuDevice::spec(); }
  device::Capabilities capabilities() const override {
    return check("capabilities").ForwardingGpuDevice::capabilities();
  }
  device::Executor& executor() override {
    return check("executor").ForwardingGpuDevice::executor();
  }
  core::Result<device::DomainId> create_bandwidth_domain(double share) override {
    return check("create_bandwidth_domain").ForwardingGpuDevice::create_bandwidth_domain(share);
  }
  core::Result<device::StreamId> create_stream(const device::StreamConfig& config) override {
    return check("create_stream").ForwardingGpuDevice::create_stream(config);
  }
  core::Status configure_stream(device::StreamId stream,
                                const device::StreamConfig& config) override {
    return check("configure_stream").ForwardingGpuDevice::configure_stream(stream, config);
  }
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override {
    return check("submit").ForwardingGpuDevice::submit(stream, std::move(sequence), tag,
                                                       std::move(done));
  }
  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override {
    return check("submit_range")
        .ForwardingGpuDevice::submit_range(stream, std::move(sequence), range, tag,
                                           std::move(done));
  }
  core::Status submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                           device::KernelSpan span, std::uint64_t tag,
                           device::DoneCallback done) override {
    return check("submit_span")
        .ForwardingGpuDevice::submit_span(stream, std::move(sequence), span, tag, std::move(done));
  }
  core::Status end_after_head(device::StreamId stream) override {
    return check("end_after_head").ForwardingGpuDevice::end_after_head(stream);
  }
  core::Status request_yield(device::StreamId stream) override {
    return check("request_yield").ForwardingGpuDevice::request_yield(stream);
  }
  core::Status suspend_context(device::ContextId context) override {
    return check("suspend_context").ForwardingGpuDevice::suspend_context(context);
  }
  core::Status resume_context(device::ContextId context) override {
    return check("resume_context").ForwardingGpuDevice::resume_context(context);
  }
  core::Status set_clock_mhz(double mhz) override {
    return check("set_clock_mhz").ForwardingGpuDevice::set_clock_mhz(mhz);
  }
  double clock_mhz() const override { return check("clock_mhz").ForwardingGpuDevice::clock_mhz(); }
  void add_observer(device::DeviceObserver* observer) override {
    check("add_observer").ForwardingGpuDevice::add_observer(observer);
  }
  device::DeviceStats stats() const override { return check("stats").ForwardingGpuDevice::stats(); }

 private:
  const VanishingDevice& check(const char* call) const {
    EXPECT_FALSE(gone_) << call << "() called on a device that is gone";
    return *this;
  }
  VanishingDevice& check(const char* call) {
    std::as_const(*this).check(call);
    return *this;
  }
  bool gone_ = false;
};

// Kernels every mode runs: 32 blocks of 128 threads, 3.2 us each on the fake, with checkpoints so
// that the modes that preempt have something to preempt.
workload::KernelSequencePtr work(int kernels) {
  workload::Kernel k;
  k.name = "work";
  k.blocks = 32;
  k.block.threads = 128;
  k.block.registers_per_thread = 32;
  k.flops_per_block = 100;
  k.checkpoints = 3;
  workload::KernelSequence seq;
  seq.groups.push_back(workload::KernelGroup{.kernels = {k}, .repeat = kernels});
  return std::make_shared<const workload::KernelSequence>(std::move(seq));
}

// A mode attached to `dev` with one tenant (exclusive) or two, each with work queued, run part of
// the way so that kernels are in flight and the mode's timers are due later.
std::unique_ptr<SharingMode> busy_mode(std::string_view name, device::GpuDevice& dev,
                                       test::ManualExecutor& exec) {
  auto made = make_sharing_mode(name);
  EXPECT_TRUE(made) << made.error().message();
  if (!made) return nullptr;
  auto mode = std::move(*made);
  std::vector<TenantInfo> ts{{.id = 10, .name = "chat", .latency_critical = true},
                             {.id = 11, .name = "train"}};
  if (name == "exclusive") ts.resize(1);
  const auto attached = mode->attach(dev, ts);
  EXPECT_TRUE(attached) << attached.error().message();
  if (!attached) return nullptr;
  for (const auto& t : ts) {
    const auto submitted = mode->submit(t.id, work(50), t.id, nullptr);
    EXPECT_TRUE(submitted) << submitted.error().message();
  }
  exec.run_until(exec.now() + 2500);
  EXPECT_GT(exec.pending(), 0u);
  return mode;
}

// mig needs a GPU with MIG profiles; the others run on the small fake.
hw::GpuSpec spec_for(std::string_view mode) {
  if (mode != "mig") return test::fake_spec(16);
  auto a100 = hw::find_gpu("A100-SXM4-40GB");
  EXPECT_TRUE(a100.has_value());
  return *a100;
}

class ModeLifetime : public ::testing::TestWithParam<std::string> {};

TEST_P(ModeLifetime, DestroyedAfterItsDeviceItCallsOnlyTheExecutor) {
  test::ManualExecutor exec;
  auto fake = std::make_unique<test::FakeDevice>(exec, spec_for(GetParam()));
  VanishingDevice dev(*fake);
  auto mode = busy_mode(GetParam(), dev, exec);
  ASSERT_NE(mode, nullptr);
  dev.gone();
  mode.reset();
  fake.reset();  // cancels the device's own events
  EXPECT_EQ(exec.pending(), 0u) << "a timer of the mode outlived it";
}

TEST_P(ModeLifetime, DestroyedBeforeItsDeviceItLeavesNoTimerBehind) {
  test::ManualExecutor exec;
  auto fake = std::make_unique<test::FakeDevice>(exec, spec_for(GetParam()));
  auto mode = busy_mode(GetParam(), *fake, exec);
  ASSERT_NE(mode, nullptr);
  mode.reset();
  fake.reset();
  EXPECT_EQ(exec.pending(), 0u) << "a timer of the mode outlived it";
}

std::vector<std::string> mode_names() {
  std::vector<std::string> out;
  for (const auto& entry : sharing_modes()) out.emplace_back(entry.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryMode, ModeLifetime, ::testing::ValuesIn(mode_names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tessera::gpu
