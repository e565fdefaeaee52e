#include "tessera/gpu/modes/priority_fill/priority_fill_mode.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/mode_test_util.hpp"

namespace tessera::gpu {
namespace {

using test::CallKind;
using ::testing::HasSubstr;

device::Capabilities with_priorities() {
  auto caps = test::all_capabilities();
  caps.stream_priorities = true;
  return caps;
}

// "chat" is latency-critical with a TPOT target, "train" best-effort.
std::vector<TenantInfo> chat_and_train() {
  auto ts = tenants({{"chat", 0}, {"train", 0}});
  ts[0].latency_critical = true;
  ts[0].priority = 10;
  ts[0].tpot_slo = core::millis(50);
  return ts;
}

PriorityFillMode with_share(double share) {
  PriorityFillOptions o;
  o.best_effort_share = share;
  return PriorityFillMode(o);
}

TEST(PriorityFill, LatencyCriticalStreamsRunAboveBestEffortOnEverySm) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16), with_priorities());
  auto mode = with_share(0.5);
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  ASSERT_EQ(dev.stream_count(), 2u);
  EXPECT_EQ(dev.stream_config(0).priority, 1);
  EXPECT_EQ(dev.stream_config(1).priority, 0);
  EXPECT_TRUE(dev.stream_config(0).sms.empty());
  // Nothing latency-critical is in flight yet: training has the whole GPU.
  EXPECT_TRUE(dev.stream_config(1).sms.empty());
}

TEST(PriorityFill, BestEffortIsHeldToTheReserveExactlyWhileLatencyCriticalWorkIsInFlight) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16), with_priorities());
  auto mode = with_share(0.5);
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  const auto grid = PartitionGrid::of(dev.spec());
  ASSERT_TRUE(grid);
  const int reserve = grid->round_up(grid->usable_sms / 2);

  Completions done;
  ASSERT_TRUE(mode.submit(11, test::sequence_of({1e6}), 1, done.callback()));  // train, 1 ms
  EXPECT_TRUE(dev.calls_of(CallKind::kConfigure).empty());
  exec.run_until(core::micros(100));
  ASSERT_TRUE(mode.submit(10, test::sequence_of({2e5}), 2, done.callback()));  // chat, 0.2 ms
  // Chat's arrival shrinks training's stream to the top of the grid at once.
  ASSERT_EQ(dev.calls_of(CallKind::kConfigure).size(), 1u);
  EXPECT_EQ(dev.stream_config(1).sms,
            device::SmMask::range(grid->usable_sms - reserve, grid->usable_sms));
  EXPECT_EQ(dev.stream_config(1).priority, 0);  // only the SM set changes
  EXPECT_EQ(mode.sm_set(1).count(), reserve);
  exec.run_all();
  // Chat's completion gives training every SM back.
  ASSERT_EQ(dev.calls_of(CallKind::kConfigure).size(), 2u);
  EXPECT_TRUE(dev.stream_config(1).sms.empty());
  ASSERT_EQ(done.done.size(), 2u);

  double fraction = -1;
  double resizes = -1;
  for (const auto& c : mode.counters()) {
    if (c.name == "reserve_time_fraction") fraction = c.value;
    if (c.name == "resizes") resizes = c.value;
  }
  EXPECT_EQ(resizes, 2);
  // Held from chat's submission (0.1 ms) to its end (0.3 ms), of a run that ends at 1 ms.
  EXPECT_NEAR(fraction, 0.2, 0.01);
}

TEST(PriorityFill, ALatencyCriticalTenantResubmittingFromItsCallbackKeepsTheReserve) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16), with_priorities());
  auto mode = with_share(0.5);
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  int steps = 0;
  device::DoneCallback next = [&](const device::SubmissionDone&) {
    if (++steps < 5) {
      EXPECT_TRUE(mode.submit(10, test::sequence_of({1e5}), 0, next));
    }
  };
  ASSERT_TRUE(mode.submit(10, test::sequence_of({1e5}), 0, next));
  exec.run_all();
  EXPECT_EQ(steps, 5);
  // Back-to-back steps: one shrink at the first, one release after the last.
  EXPECT_EQ(dev.calls_of(CallKind::kConfigure).size(), 2u);
}

workload::KernelSequencePtr decode_step(double ns) {
  auto s = std::make_shared<workload::KernelSequence>(*test::sequence_of({ns}));
  s->phase = workload::Phase::kDecode;
  return s;
}

// slo_guided, chat's TPOT target 50 ms (a step's budget 25 ms): two quick decode steps each grow
// the reserve a grid step, so training's set at chat's third step is the floor and two steps
// more; a 30 ms step halves it.
TEST(PriorityFill, SloGuidedTheReserveFollowsTheServicesSlack) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(64), with_priorities());
  PriorityFillOptions o;
  o.best_effort_share = 0.1;
  o.slo_guided = true;
  PriorityFillMode mode(o);
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  const auto grid = PartitionGrid::of(dev.spec());
  ASSERT_TRUE(grid);
  const int floor = reserve_sms(*grid, 0.1);
  ASSERT_TRUE(mode.submit(11, test::sequence_of({1e9}), 1, nullptr));  // train, 1 s
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(mode.submit(10, decode_step(1e5), 2, nullptr));
    EXPECT_EQ(mode.sm_set(1).count(), floor + step * grid->granularity);
    exec.run_until(exec.now() + core::millis(1));
  }
  ASSERT_TRUE(mode.submit(10, decode_step(3e7), 3, nullptr));
  const int grown = floor + 2 * grid->granularity;
  EXPECT_EQ(mode.sm_set(1).count(), grown);
  exec.run_until(exec.now() + core::millis(40));
  ASSERT_TRUE(mode.submit(10, decode_step(1e5), 4, nullptr));
  EXPECT_EQ(mode.sm_set(1).count(), std::max(floor, grid->round(grown / 2)));
  double mean = -1;
  for (const auto& c : mode.counters()) {
    if (c.name == "mean_reserve_sms") mean = c.value;
  }
  EXPECT_GE(mean, floor);
  EXPECT_LE(mean, grown);
}

TEST(PriorityFill, AServiceWithoutALatencyTargetFillsLikeBestEffortWork) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16), with_priorities());
  auto mode = with_share(0.5);
  auto ts = tenants({{"chat", 0}, {"batch-llm", 0}});
  ts[0].latency_critical = true;
  ts[0].ttft_slo = core::millis(500);
  ts[1].latency_critical = true;  // an inference service, but no target to protect
  ASSERT_TRUE(mode.attach(dev, ts));
  EXPECT_EQ(dev.stream_config(0).priority, 1);
  EXPECT_EQ(dev.stream_config(1).priority, 0);
  ASSERT_TRUE(mode.submit(10, test::sequence_of({1e5}), 0, nullptr));
  EXPECT_FALSE(dev.stream_config(1).sms.empty());
}

TEST(PriorityFill, WithoutStreamPrioritiesEveryStreamRunsAtTheDefault) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));  // no stream priorities
  auto mode = with_share(0.5);
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  EXPECT_EQ(dev.stream_config(0).priority, 0);
  EXPECT_EQ(dev.stream_config(1).priority, 0);
}

TEST(PriorityFill, NeedsSmPartitions) {
  test::ManualExecutor exec;
  auto caps = with_priorities();
  caps.sm_partitions = false;
  test::FakeDevice dev(exec, test::fake_spec(16), caps);
  auto mode = with_share(0.5);
  const auto attached = mode.attach(dev, chat_and_train());
  ASSERT_FALSE(attached);
  EXPECT_THAT(attached.error().message(), HasSubstr("no SM partitions"));
  EXPECT_THAT(attached.error().message(), HasSubstr("fake-gpu"));
}

TEST(PriorityFill, RejectsUnknownTenantsAndASecondAttach) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16), with_priorities());
  auto mode = with_share(0.5);
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  EXPECT_FALSE(mode.attach(dev, chat_and_train()));
  const auto unknown = mode.submit(99, test::sequence_of({1e3}), 0, nullptr);
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message(), HasSubstr("99"));
}

}  // namespace
}  // namespace tessera::gpu
