// The fake device is what every mode test stands on, so its own behaviour is pinned here.
#include "support/fake_device.hpp"

#include <gtest/gtest.h>

#include "support/manual_executor.hpp"

namespace tessera::test {
namespace {

TEST(FakeDevice, RunsAStreamInOrderForItsFlops) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec(), all_capabilities(), /*flops_per_ns=*/2.0);
  const auto s = dev.create_stream({});
  ASSERT_TRUE(s);
  std::vector<core::Nanos> finished;
  auto cb = [&](const device::SubmissionDone& d) { finished.push_back(d.finished); };
  ASSERT_TRUE(dev.submit(*s, sequence_of({100, 300}, /*repeat=*/2), 0, cb));
  ASSERT_TRUE(dev.submit(*s, sequence_of({1}), 1, cb));
  exec.run_all();
  EXPECT_EQ(finished, (std::vector<core::Nanos>{400, 401}));  // 50+150 twice, then 1 (rounded up)
  EXPECT_EQ(dev.stats().kernels_completed, 5);
}

TEST(FakeDevice, SuspendedKernelContinuesWhereItStopped) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec());
  const auto s = dev.create_stream({.context = 3, .sms = {}});
  ASSERT_TRUE(s);
  core::Nanos finished = -1;
  ASSERT_TRUE(dev.submit(*s, sequence_of({1000}), 0,
                         [&](const device::SubmissionDone& d) { finished = d.finished; }));
  exec.run_until(400);
  ASSERT_TRUE(dev.suspend_context(3));
  exec.run_until(900);
  ASSERT_TRUE(dev.resume_context(3));
  exec.run_all();
  EXPECT_EQ(finished, 1500);
  ASSERT_EQ(dev.runs().size(), 2u);
  EXPECT_EQ(dev.runs()[0].end, 400);
  EXPECT_FALSE(dev.runs()[0].completed);
  EXPECT_EQ(dev.runs()[1].start, 900);
}

TEST(FakeDevice, RefusesWhatItsCapabilitiesLack) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec(), device::Capabilities{});
  EXPECT_FALSE(dev.create_stream({.sms = device::SmMask::first(2)}));
  EXPECT_FALSE(dev.create_stream({.context = 0, .sms = {}, .max_sms = 2}));
  EXPECT_FALSE(dev.create_bandwidth_domain(0.5));
  EXPECT_FALSE(dev.suspend_context(1));
}

TEST(FakeDevice, BandwidthDomainsCannotExceedTheDevice) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec());
  EXPECT_TRUE(dev.create_bandwidth_domain(0.75));
  EXPECT_FALSE(dev.create_bandwidth_domain(0.5));
  EXPECT_TRUE(dev.create_bandwidth_domain(0.25));
}

}  // namespace
}  // namespace tessera::test
