#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "gpu/mode_test_util.hpp"
#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"

namespace tessera::gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr core::Nanos kRemapCost = 100;

CoGpuOptions options(core::Nanos residency = 0) {
  CoGpuOptions o;
  o.remap_cost = kRemapCost;
  o.remap_min_residency = residency;
  return o;
}

std::vector<TenantInfo> chat_and_train() {
  return {TenantInfo{.id = 10, .name = "chat", .latency_critical = true},
          TenantInfo{.id = 11, .name = "train"}};
}

double counter(const SharingMode& mode, std::string_view name) {
  for (const auto& c : mode.counters()) {
    if (c.name == name) return c.value;
  }
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

// What cooperative migration promises, checked on everything the fake device ran: no kernel runs
// on all SMs by accident (an empty mask), kernels of different streams that overlap in time use
// disjoint SMs, each stream's configuration changes only between its kernels, and every SM set
// is whole granules of the GPU's green-context grid.
void expect_cooperative(const test::FakeDevice& dev) {
  const auto grid = PartitionGrid::of(dev.spec());
  ASSERT_TRUE(grid);
  const auto& runs = dev.runs();
  for (std::size_t a = 0; a < runs.size(); ++a) {
    const auto& ra = runs[a];
    ASSERT_FALSE(ra.config.sms.empty()) << "run " << a << " on all SMs";
    EXPECT_EQ(ra.config.sms.count() % grid->granularity, 0) << "run " << a;
    EXPECT_GE(ra.config.sms.count(), grid->min_sms) << "run " << a;
    for (std::size_t b = a + 1; b < runs.size(); ++b) {
      const auto& rb = runs[b];
      if (ra.stream == rb.stream || ra.end <= rb.start || rb.end <= ra.start) continue;
      EXPECT_FALSE(ra.config.sms.overlaps(rb.config.sms))
          << "streams " << ra.stream << " and " << rb.stream << " share SMs during ["
          << std::max(ra.start, rb.start) << ", " << std::min(ra.end, rb.end) << ")";
    }
    for (const auto& call : dev.calls_of(test::CallKind::kConfigure)) {
      if (call.stream != ra.stream) continue;
      EXPECT_FALSE(call.at > ra.start && call.at < ra.end)
          << "stream " << ra.stream << " reconfigured at " << call.at << " inside a kernel ["
          << ra.start << ", " << ra.end << ")";
    }
  }
}

std::vector<core::Nanos> durations_on(const test::FakeDevice& dev, device::StreamId stream) {
  std::vector<core::Nanos> out;
  for (const auto& r : dev.runs()) {
    if (r.stream == stream) out.push_back(r.end - r.start);
  }
  return out;
}

TEST(CoGpuMode, NeedsSmPartitionsAndRoomForEveryTenant) {
  test::ManualExecutor exec;
  auto caps = test::all_capabilities();
  caps.sm_partitions = false;
  test::FakeDevice plain(exec, test::fake_spec(16), caps);
  CoGpuMode mode(options(), std::make_unique<CoGpuPolicy>());
  const auto ts = chat_and_train();
  const auto no_partitions = mode.attach(plain, ts);
  ASSERT_FALSE(no_partitions);
  EXPECT_EQ(no_partitions.error().code(), core::Code::kUnsupported);
  EXPECT_THAT(no_partitions.error().message(), HasSubstr("choose mps or time-slicing"));

  test::FakeDevice small(exec, test::fake_spec(16));
  std::vector<TenantInfo> nine;
  for (TenantId id = 0; id < 9; ++id) nine.push_back({.id = id, .name = "t"});
  const auto crowded = mode.attach(small, nine);
  ASSERT_FALSE(crowded);
  EXPECT_THAT(crowded.error().message(), HasSubstr("9 tenants need a partition of at least 2"));
  EXPECT_EQ(small.stream_count(), 0u);

  ASSERT_TRUE(mode.attach(small, ts));
  EXPECT_EQ(small.stream_count(), 2u);
  EXPECT_FALSE(mode.submit(99, test::sequence_of({1}), 0, nullptr));
  const auto empty =
      mode.submit(10, std::make_shared<const workload::KernelSequence>(), 0, nullptr);
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message(), HasSubstr("no kernel"));
}

TEST(CoGpuMode, RejectsAKernelTheGpuCannotLaunchAtSubmission) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  CoGpuMode mode(options(), std::make_unique<CoGpuPolicy>());
  const auto ts = chat_and_train();
  ASSERT_TRUE(mode.attach(dev, ts));
  workload::Kernel huge;
  huge.name = "huge_block";
  huge.block.threads = 4096;  // more than a block may have
  const auto st = mode.submit(10, workload::single_kernel(huge), 7, nullptr);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("submission 7 of tenant 'chat'"));
  EXPECT_THAT(st.error().message(), HasSubstr("huge_block"));
  exec.run_all();
  EXPECT_TRUE(dev.runs().empty());
  // The mode is still usable.
  ASSERT_TRUE(mode.submit(10, test::sequence_of({5}), 8, nullptr));
  exec.run_all();
  EXPECT_EQ(dev.runs().size(), 1u);
}

TEST(CoGpuMode, RemapsOnlyBetweenKernelsAndChargesTheRemapCostExactly) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  CoGpuMode mode(options(), std::make_unique<CoGpuPolicy>());
  const auto ts = chat_and_train();
  ASSERT_TRUE(mode.attach(dev, ts));
  Completions done;
  // Training alone: chat's SMs go to it, after one remap.
  ASSERT_TRUE(mode.submit(11, test::sequence_of({1000, 1001, 1002}), 1, done.callback()));
  exec.run_until(1500);  // mid second kernel [1100, 2101)
  ASSERT_EQ(dev.runs().size(), 1u);
  EXPECT_EQ(dev.runs()[0].start, kRemapCost);
  EXPECT_EQ(dev.runs()[0].config.sms, device::SmMask::first(16));
  EXPECT_EQ(mode.held_sms(1), device::SmMask::first(16));
  EXPECT_TRUE(mode.held_sms(0).empty());

  // Chat arrives: it waits for training's in-flight kernel to end at 2101, both pay the remap
  // cost, then chat runs on its new partition and training on the floor it keeps.
  ASSERT_TRUE(mode.submit(10, test::sequence_of({500}), 2, done.callback()));
  EXPECT_TRUE(mode.held_sms(0).empty());  // not while training's kernel holds those SMs
  exec.run_all();
  const auto chat_runs = durations_on(dev, 0);
  ASSERT_EQ(chat_runs.size(), 1u);
  const auto& chat = *std::find_if(dev.runs().begin(), dev.runs().end(),
                                   [](const auto& r) { return r.stream == 0; });
  EXPECT_EQ(chat.start, 2101 + kRemapCost);
  EXPECT_EQ(chat.config.sms, device::SmMask::range(0, 14));
  const auto& third = dev.runs().back();
  EXPECT_EQ(third.stream, 1u);
  EXPECT_EQ(third.start, 2101 + kRemapCost);
  EXPECT_EQ(third.config.sms, device::SmMask::range(14, 16));
  // Training's kernels ran in order, each whole, with its configuration fixed while it ran.
  EXPECT_THAT(durations_on(dev, 1), ElementsAre(1000, 1001, 1002));
  EXPECT_THAT(done.done, ElementsAre(std::pair<std::uint64_t, core::Nanos>{2, 2701},
                                     std::pair<std::uint64_t, core::Nanos>{1, 3203}));
  expect_cooperative(dev);
  // Time a ready kernel was held back: training 0 -> 100 (its first remap) and 2101 -> 2201,
  // chat 1500 -> 2201.
  EXPECT_DOUBLE_EQ(counter(mode, "remap_wait_ms"), 901e-6);
  EXPECT_GE(counter(mode, "remaps"), 3);
  EXPECT_EQ(counter(mode, "preemptions"), 0);
}

// Every tenant with work on all usable SMs until `at`, one granule less from then on: a policy
// whose answer changes with time alone, so it asks to be revisited at `at`.
class ShrinksAt final : public RemapPolicy {
 public:
  explicit ShrinksAt(core::Nanos at) : at_(at) {}
  std::string_view name() const override { return "shrinks-at"; }
  RemapTargets decide(const RemapSnapshot& s) const override {
    RemapTargets out;
    const int size = s.now < at_ ? s.grid.usable_sms : s.grid.usable_sms - s.grid.granularity;
    for (const auto& t : s.tenants) out.sms.push_back(t.has_work ? size : t.sms);
    if (s.now < at_) out.revisit_at = at_;
    return out;
  }

 private:
  core::Nanos at_;
};

// A tenant alone has no events mid-kernel: a remap decided by time must still land then, and
// preempt a persistent kernel at its next checkpoint rather than wait for its end.
TEST(CoGpuMode, APolicyDecidingByTimeIsAskedAgainMidKernelAndPreempts) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  CoGpuMode mode(options(), std::make_unique<ShrinksAt>(3000));
  const std::vector<TenantInfo> ts = {{.id = 1, .name = "train"}};
  ASSERT_TRUE(mode.attach(dev, ts));
  auto seq = std::make_shared<workload::KernelSequence>(*test::sequence_of({10000}));
  seq->groups[0].kernels[0].checkpoints = 9;  // every 1000 ns of its run
  ASSERT_TRUE(mode.submit(1, seq, 1, nullptr));
  exec.run_all();
  const auto grid = PartitionGrid::of(dev.spec());
  ASSERT_TRUE(grid);
  EXPECT_EQ(counter(mode, "preemptions"), 1);
  const auto& runs = dev.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].yielded);
  EXPECT_EQ(runs[0].config.sms.count(), grid->usable_sms);
  // It stopped at the first checkpoint after 3000, not at its end.
  EXPECT_LT(runs[0].end, 5000);
  EXPECT_TRUE(runs[1].completed);
  EXPECT_EQ(runs[1].config.sms.count(), grid->usable_sms - grid->granularity);
  EXPECT_EQ(mode.held_sms(0).count(), grid->usable_sms - grid->granularity);
}

TEST(CoGpuMode, AShortGapKeepsInferenceSmsForTheMinimumResidency) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  CoGpuMode mode(options(/*residency=*/5000), std::make_unique<CoGpuPolicy>());
  const auto ts = chat_and_train();
  ASSERT_TRUE(mode.attach(dev, ts));
  ASSERT_TRUE(mode.submit(10, test::sequence_of({300}), 1, nullptr));
  ASSERT_TRUE(mode.submit(11, test::sequence_of({100}, 200), 2, nullptr));
  exec.run_until(1000);
  ASSERT_FALSE(mode.held_sms(0).empty());
  const int chat_sms = mode.held_sms(0).count();
  // Chat finished long ago but changed partition at time 0: it keeps its SMs until 5000.
  exec.run_until(4900);
  EXPECT_EQ(mode.held_sms(0).count(), chat_sms);
  exec.run_until(5200);
  EXPECT_TRUE(mode.held_sms(0).empty());
  exec.run_all();
  expect_cooperative(dev);
  EXPECT_EQ(mode.held_sms(1), device::SmMask::first(16));
}

// tpot-first after the serving engine's CPU time: chat's decode step ends, chat has no work while
// its engine prepares the next step (the trainer takes the GPU), then a prefill that pauses the
// running requests arrives. It still holds up their next token, so it gets the decode reservation
// (every usable SM but the trainer's minimum partition); a prefill with nothing generating gets
// the share its TTFT budget needs (one minimum partition here, its target being far off).
TEST(CoGpuMode, APrefillPausingRequestsAfterAnEngineGapKeepsTheDecodeReservation) {
  const auto grid = PartitionGrid::of(test::fake_spec(16));
  ASSERT_TRUE(grid);
  std::map<bool, int> prefill_sms;
  for (const bool mid_generation : {false, true}) {
    test::ManualExecutor exec;
    test::FakeDevice dev(exec, test::fake_spec(16));
    CoGpuMode mode(options(), std::make_unique<TpotFirstPolicy>());
    const std::vector<TenantInfo> ts = {{.id = 10,
                                         .name = "chat",
                                         .latency_critical = true,
                                         .ttft_slo = 1'000'000,
                                         .tpot_slo = 1'000'000},
                                        {.id = 11, .name = "train"}};
    ASSERT_TRUE(mode.attach(dev, ts));
    ASSERT_TRUE(mode.submit(11, test::sequence_of({100}, 200), 1, nullptr));
    const auto step = [&](workload::Phase phase, bool mid, std::uint64_t tag) {
      auto seq = std::make_shared<workload::KernelSequence>(*test::sequence_of({300}));
      seq->phase = phase;
      seq->mid_generation = mid;
      ASSERT_TRUE(mode.submit(10, seq, tag, nullptr));
    };
    step(workload::Phase::kPrefill, false, 2);  // the first request's prompt: an observation
    exec.run_until(2000);
    step(workload::Phase::kDecode, true, 3);
    exec.run_until(4000);  // 3.3 us of engine time after the decode step: chat has no work
    step(workload::Phase::kPrefill, mid_generation, 4);
    exec.run_all();
    expect_cooperative(dev);
    const auto& runs = dev.runs();
    const auto last = std::find_if(runs.rbegin(), runs.rend(), [](const test::KernelRun& r) {
      return r.context == context_for(0);
    });
    ASSERT_NE(last, runs.rend());
    EXPECT_EQ(last->tag, 4u);
    prefill_sms[mid_generation] = last->config.sms.count();
  }
  EXPECT_EQ(prefill_sms[true], grid->usable_sms - grid->min_sms);
  EXPECT_EQ(prefill_sms[false], grid->min_sms);
}

// Three tenants with SLOs on H100- and A100-shaped grids: many remaps, all on whole granules,
// never overlapping, every submission done in order.
void run_mixed(const hw::GpuSpec& spec, std::unique_ptr<RemapPolicy> policy) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, spec);
  CoGpuMode mode(options(), std::move(policy));
  const std::vector<TenantInfo> ts = {
      {.id = 1, .name = "chat", .latency_critical = true, .ttft_slo = 4000, .tpot_slo = 900},
      {.id = 2, .name = "code", .latency_critical = true, .priority = 1, .tpot_slo = 2000},
      {.id = 3, .name = "train"}};
  ASSERT_TRUE(mode.attach(dev, ts)) << spec.name;
  std::map<TenantId, std::vector<std::uint64_t>> finished;
  for (std::uint64_t k = 0; k < 30; ++k) {
    const TenantId who = k % 3 == 2 ? 3 : static_cast<TenantId>(1 + k % 2);
    auto seq = std::make_shared<workload::KernelSequence>(*test::sequence_of({200, 50}, 3));
    seq->phase = who == 3     ? workload::Phase::kTraining
                 : k % 4 == 0 ? workload::Phase::kPrefill
                              : workload::Phase::kDecode;
    exec.run_until(static_cast<core::Nanos>(k) * 400);
    ASSERT_TRUE(mode.submit(who, seq, k, [&finished, who](const device::SubmissionDone& d) {
      finished[who].push_back(d.tag);
    }));
  }
  exec.run_all();
  expect_cooperative(dev);
  std::size_t total = 0;
  for (const auto& [who, tags] : finished) {
    EXPECT_TRUE(std::is_sorted(tags.begin(), tags.end())) << "tenant " << who;
    total += tags.size();
  }
  EXPECT_EQ(total, 30u);
  EXPECT_GT(counter(mode, "remaps"), 3) << spec.name;
}

TEST(CoGpuMode, KeepsGranularityAndDisjointMasksOnHopperAndAmpere) {
  for (const auto* name : {"h100", "a100-40gb"}) {
    const auto spec = hw::find_gpu(name);
    ASSERT_TRUE(spec);
    run_mixed(*spec, std::make_unique<CoGpuPolicy>());
    run_mixed(*spec, std::make_unique<TpotFirstPolicy>());
  }
}

}  // namespace
}  // namespace tessera::gpu
