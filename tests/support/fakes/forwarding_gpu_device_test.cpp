// Every call reaches the inner device unchanged, so a decorator that overrides a few calls
// leaves the rest of the device as it was.
#include "support/fakes/forwarding_gpu_device.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/fakes/fake_device.hpp"
#include "support/fakes/manual_executor.hpp"

namespace tessera::test {
namespace {

class CountingObserver final : public device::DeviceObserver {
 public:
  void on_kernel_complete(const device::KernelEvent&) override { ++events; }
  int events = 0;
};

TEST(ForwardingGpuDevice, EveryCallReachesTheInnerDevice) {
  ManualExecutor exec;
  FakeDevice inner(exec, fake_spec());
  ForwardingGpuDevice dev(inner);
  EXPECT_EQ(&dev.spec(), &inner.spec());
  EXPECT_EQ(&dev.executor(), &exec);
  EXPECT_TRUE(dev.capabilities().block_ranges);
  EXPECT_TRUE(dev.capabilities().kernel_preemption);
  CountingObserver observer;
  dev.add_observer(&observer);

  const auto domain = dev.create_bandwidth_domain(0.5);
  ASSERT_TRUE(domain);
  const auto s =
      dev.create_stream({.context = 4, .sms = {}, .bandwidth_domain = *domain, .priority = 0});
  ASSERT_TRUE(s);
  ASSERT_TRUE(dev.configure_stream(*s, {.context = 4, .sms = device::SmMask::first(8)}));
  int done = 0;
  auto count = [&](const device::SubmissionDone&) { ++done; };
  ASSERT_TRUE(dev.submit(*s, sequence_of({100}), 7, count));
  ASSERT_TRUE(dev.submit_range(*s, sequence_of({10}), {.begin = 0, .end = 1}, 8, count));
  ASSERT_TRUE(dev.request_yield(*s));
  ASSERT_TRUE(dev.suspend_context(4));
  ASSERT_TRUE(dev.resume_context(4));
  ASSERT_TRUE(dev.set_clock_mhz(1200));
  EXPECT_EQ(dev.clock_mhz(), 1200);
  exec.run_all();

  std::vector<CallKind> kinds;
  for (const auto& c : inner.calls()) kinds.push_back(c.kind);
  EXPECT_EQ(kinds, (std::vector<CallKind>{
                       CallKind::kCreateDomain, CallKind::kCreateStream, CallKind::kConfigure,
                       CallKind::kSubmit, CallKind::kSubmitRange, CallKind::kRequestYield,
                       CallKind::kSuspend, CallKind::kResume, CallKind::kSetClock}));
  ASSERT_EQ(inner.calls_of(CallKind::kSubmitRange).size(), 1u);
  EXPECT_EQ(inner.calls_of(CallKind::kSubmitRange)[0].tag, 8u);
  EXPECT_EQ(done, 2);
  EXPECT_EQ(observer.events, 2);
  EXPECT_EQ(dev.stats().kernels_completed, 2);
}

}  // namespace
}  // namespace tessera::test
