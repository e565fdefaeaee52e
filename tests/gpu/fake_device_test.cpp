// The fake device is what every mode test stands on, so its own behaviour is pinned here.
#include "support/fakes/fake_device.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/fakes/manual_executor.hpp"

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

// Records the events observers see.
struct Events final : device::DeviceObserver {
  void on_kernel_complete(const device::KernelEvent& e) override { seen.push_back(e); }
  std::vector<device::KernelEvent> seen;
};

workload::KernelSequencePtr one_kernel(std::int64_t blocks, double flops_per_block,
                                       int checkpoints = 0, bool block_independent = true) {
  workload::Kernel k;
  k.name = "k";
  k.blocks = blocks;
  k.flops_per_block = flops_per_block;
  k.checkpoints = checkpoints;
  k.block_independent = block_independent;
  return workload::single_kernel(k);
}

TEST(FakeDevice, ARangeRunsForItsBlocksAndIsReportedWithThem) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec(), all_capabilities(), /*flops_per_ns=*/2.0);
  Events events;
  dev.add_observer(&events);
  const auto s = dev.create_stream({});
  ASSERT_TRUE(s);
  const auto seq = one_kernel(100, 7);
  ASSERT_TRUE(dev.submit_range(*s, seq, {.begin = 0, .end = 30}, 1, nullptr));   // 105 ns
  ASSERT_TRUE(dev.submit_range(*s, seq, {.begin = 30, .end = 31}, 2, nullptr));  // 3.5 -> 4
  ASSERT_TRUE(dev.submit(*s, seq, 3, nullptr));                                  // 350
  exec.run_all();
  ASSERT_EQ(events.seen.size(), 3u);
  EXPECT_EQ(events.seen[0].end, 105);
  EXPECT_EQ(events.seen[0].blocks, (device::BlockRange{.begin = 0, .end = 30}));
  EXPECT_EQ(events.seen[0].kernel, &seq->groups[0].kernels[0]);
  EXPECT_EQ(events.seen[1].end, 109);
  EXPECT_EQ(events.seen[1].blocks, (device::BlockRange{.begin = 30, .end = 31}));
  EXPECT_EQ(events.seen[2].end, 459);
  EXPECT_EQ(events.seen[2].blocks, (device::BlockRange{.begin = 0, .end = 100}));
  const auto ranges = dev.calls_of(CallKind::kSubmitRange);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[1].range, (device::BlockRange{.begin = 30, .end = 31}));
  EXPECT_EQ(ranges[1].tag, 2u);
  EXPECT_EQ(dev.runs()[1].blocks, ranges[1].range);
}

TEST(FakeDevice, RangesItCannotRunAreRejected) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec());
  const auto s = *dev.create_stream({});
  EXPECT_FALSE(dev.submit_range(s, sequence_of({1, 2}), {.begin = 0, .end = 1}, 0, nullptr));
  EXPECT_FALSE(dev.submit_range(s, one_kernel(8, 1, 0, /*block_independent=*/false),
                                {.begin = 0, .end = 4}, 0, nullptr));
  EXPECT_FALSE(dev.submit_range(s, one_kernel(8, 1), {.begin = 4, .end = 4}, 0, nullptr));
  EXPECT_FALSE(dev.submit_range(s, one_kernel(8, 1), {.begin = 4, .end = 9}, 0, nullptr));
  EXPECT_TRUE(dev.calls_of(CallKind::kSubmitRange).empty());
  FakeDevice bare(exec, fake_spec(), device::Capabilities{});
  const auto b = *bare.create_stream({});
  const auto refused = bare.submit_range(b, one_kernel(8, 1), {.begin = 0, .end = 4}, 0, nullptr);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), core::Code::kUnsupported);
  EXPECT_FALSE(bare.request_yield(b));
}

TEST(FakeDevice, AYieldStopsAtTheNextCheckpointAndTheRestTakesTheNewConfiguration) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec());
  Events events;
  dev.add_observer(&events);
  const auto s = *dev.create_stream({});
  core::Nanos finished = -1;
  // 1000 ns of work with checkpoints at 250, 500 and 750.
  ASSERT_TRUE(dev.submit(s, one_kernel(10, 100, /*checkpoints=*/3), 0,
                         [&](const device::SubmissionDone& d) { finished = d.finished; }));
  exec.run_until(300);
  const device::StreamConfig moved{.context = 0, .sms = device::SmMask::first(4)};
  ASSERT_TRUE(dev.configure_stream(s, moved));
  ASSERT_TRUE(dev.request_yield(s));
  ASSERT_TRUE(dev.request_yield(s));  // already yielding: no effect
  exec.run_all();
  ASSERT_EQ(events.seen.size(), 2u);
  EXPECT_TRUE(events.seen[0].yielded);
  EXPECT_EQ(events.seen[0].end, 500);
  EXPECT_EQ(events.seen[0].sms, 16);
  EXPECT_FALSE(events.seen[1].yielded);
  EXPECT_EQ(events.seen[1].start, 500);
  EXPECT_EQ(events.seen[1].end, 1000);  // the work is conserved
  EXPECT_EQ(events.seen[1].sms, 4);
  EXPECT_EQ(events.seen[1].blocks, events.seen[0].blocks);
  EXPECT_EQ(finished, 1000);
  EXPECT_EQ(dev.stats().kernels_completed, 1);
  ASSERT_EQ(dev.runs().size(), 2u);
  EXPECT_TRUE(dev.runs()[0].yielded);
  EXPECT_FALSE(dev.runs()[0].completed);
  EXPECT_EQ(dev.runs()[1].config.sms, moved.sms);
  EXPECT_EQ(dev.calls_of(CallKind::kRequestYield).size(), 2u);
}

TEST(FakeDevice, YieldWithoutCheckpointsOrAfterTheLastChangesNothing) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec());
  Events events;
  dev.add_observer(&events);
  const auto a = *dev.create_stream({});
  const auto b = *dev.create_stream({});
  ASSERT_TRUE(dev.submit(a, one_kernel(10, 100), 0, nullptr));
  ASSERT_TRUE(dev.submit(b, one_kernel(10, 100, /*checkpoints=*/1), 0, nullptr));
  exec.run_until(600);
  ASSERT_TRUE(dev.request_yield(a));
  ASSERT_TRUE(dev.request_yield(b));  // its only checkpoint (500) has passed
  exec.run_all();
  ASSERT_TRUE(dev.request_yield(a));  // idle
  ASSERT_EQ(events.seen.size(), 2u);
  for (const auto& e : events.seen) {
    EXPECT_FALSE(e.yielded);
    EXPECT_EQ(e.end, 1000);
  }
}

TEST(FakeDevice, APendingYieldSurvivesSuspension) {
  ManualExecutor exec;
  FakeDevice dev(exec, fake_spec());
  Events events;
  dev.add_observer(&events);
  const auto s = *dev.create_stream({.context = 5, .sms = {}});
  ASSERT_TRUE(dev.submit(s, one_kernel(10, 100, /*checkpoints=*/4), 0, nullptr));
  exec.run_until(100);
  ASSERT_TRUE(dev.request_yield(s));  // checkpoint 1 at 200
  exec.run_until(150);
  ASSERT_TRUE(dev.suspend_context(5));
  exec.run_until(400);
  ASSERT_TRUE(dev.resume_context(5));  // 50 ns to the checkpoint
  exec.run_all();
  ASSERT_EQ(events.seen.size(), 2u);
  EXPECT_TRUE(events.seen[0].yielded);
  EXPECT_EQ(events.seen[0].end, 450);
  EXPECT_EQ(events.seen[1].end, 1250);
  ASSERT_EQ(dev.runs().size(), 3u);  // before the suspension, to the checkpoint, the rest
}

}  // namespace
}  // namespace tessera::test
