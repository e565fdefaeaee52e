#include "tessera/gpu/check/determinism_checker.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/fakes/fake_device.hpp"
#include "support/fakes/manual_executor.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

workload::Kernel kernel(const char* name, std::int64_t blocks, bool independent = true) {
  workload::Kernel k;
  k.name = name;
  k.blocks = blocks;
  k.flops_per_block = 100;
  k.bytes_per_block = 64;
  k.block_independent = independent;
  return k;
}

workload::KernelSequencePtr sequence(std::vector<workload::Kernel> kernels, int repeat = 1) {
  workload::KernelSequence seq;
  seq.groups.push_back(workload::KernelGroup{.kernels = std::move(kernels), .repeat = repeat});
  return std::make_shared<const workload::KernelSequence>(std::move(seq));
}

// A launch of `blocks` of `k` under `context` on one SM, from `start` to `end`, as the checker
// sees it when a test feeds it directly.
device::KernelEvent event(device::ContextId context, const workload::Kernel& k,
                          device::BlockRange blocks, core::Nanos start, core::Nanos end) {
  return {.stream = 0,
          .context = context,
          .bandwidth_domain = 0,
          .kernel = &k,
          .submission_tag = 0,
          .start = start,
          .end = end,
          .sms = 1,
          .blocks = blocks};
}

// A device double whose launches may be block ranges and may yield: every launch takes 10 ns, a
// stream runs its launches in order, and a launch marked to yield reports a yielded event at
// 5 ns and then (unless told to drop the rest) the rest of it. It checks nothing a policy asks
// for, so broken policies get to run their broken launches.
class RangeDevice final : public device::GpuDevice {
 public:
  explicit RangeDevice(device::Executor& executor) : executor_(executor) {}

  bool yield_launches = false;    // every launch yields once, half-way
  bool drop_after_yield = false;  // ...and its rest never runs (a broken preemption)

  const hw::GpuSpec& spec() const override { return spec_; }
  device::Capabilities capabilities() const override {
    auto caps = test::all_capabilities();
    caps.block_ranges = true;
    caps.kernel_preemption = true;
    return caps;
  }
  device::Executor& executor() override { return executor_; }
  core::Result<device::DomainId> create_bandwidth_domain(double) override { return 1; }
  core::Result<device::StreamId> create_stream(const device::StreamConfig& config) override {
    streams_.push_back(Stream{.config = config});
    return static_cast<device::StreamId>(streams_.size() - 1);
  }
  core::Status configure_stream(device::StreamId stream,
                                const device::StreamConfig& config) override {
    streams_[stream].config = config;
    return {};
  }
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr seq, std::uint64_t tag,
                      device::DoneCallback done) override {
    std::vector<Launch> launches;
    for (const auto& g : seq->groups) {
      for (int r = 0; r < g.repeat; ++r) {
        for (const auto& k : g.kernels) {
          launches.push_back(Launch{.keep = seq, .kernel = &k, .range = {0, k.blocks}, .tag = tag});
        }
      }
    }
    launches.back().done = std::move(done);
    for (auto& l : launches) streams_[stream].queue.push_back(std::move(l));
    start(stream);
    return {};
  }
  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr seq,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override {
    const workload::Kernel* k = &seq->groups[0].kernels[0];
    streams_[stream].queue.push_back(Launch{
        .keep = std::move(seq), .kernel = k, .range = range, .tag = tag, .done = std::move(done)});
    start(stream);
    return {};
  }
  core::Status suspend_context(device::ContextId) override { return {}; }
  core::Status resume_context(device::ContextId) override { return {}; }
  core::Status set_clock_mhz(double) override { return {}; }
  double clock_mhz() const override { return spec_.boost_clock_mhz; }
  void add_observer(device::DeviceObserver* o) override { observers_.push_back(o); }
  device::DeviceStats stats() const override { return {}; }

 private:
  struct Launch {
    workload::KernelSequencePtr keep;
    const workload::Kernel* kernel;
    device::BlockRange range;
    std::uint64_t tag;
    device::DoneCallback done{};
  };
  struct Stream {
    device::StreamConfig config;
    std::deque<Launch> queue{};
    bool busy = false;
  };

  void emit(device::StreamId id, const Launch& l, core::Nanos start, bool yielded) {
    const device::KernelEvent e{.stream = id,
                                .context = streams_[id].config.context,
                                .bandwidth_domain = 0,
                                .kernel = l.kernel,
                                .submission_tag = l.tag,
                                .start = start,
                                .end = executor_.now(),
                                .sms = 1,
                                .blocks = l.range,
                                .yielded = yielded};
    for (auto* o : observers_) o->on_kernel_complete(e);
  }

  void start(device::StreamId id) {
    auto& s = streams_[id];
    if (s.busy || s.queue.empty()) return;
    s.busy = true;
    const core::Nanos begin = executor_.now();
    if (yield_launches) {
      executor_.schedule_after(5, [this, id, begin] {
        emit(id, streams_[id].queue.front(), begin, true);
        if (drop_after_yield) return finish(id, false);
        const core::Nanos resumed = executor_.now();
        executor_.schedule_after(5, [this, id, resumed] { finish(id, true, resumed); });
      });
    } else {
      executor_.schedule_after(10, [this, id, begin] { finish(id, true, begin); });
    }
  }

  void finish(device::StreamId id, bool report, core::Nanos begin = 0) {
    auto& s = streams_[id];
    Launch l = std::move(s.queue.front());
    s.queue.pop_front();
    if (report) emit(id, l, begin, false);
    if (l.done) {
      l.done(device::SubmissionDone{
          .stream = id, .tag = l.tag, .submitted = 0, .started = 0, .finished = executor_.now()});
    }
    s.busy = false;
    start(id);
  }

  device::Executor& executor_;
  hw::GpuSpec spec_ = test::fake_spec();
  std::vector<Stream> streams_;
  std::vector<device::DeviceObserver*> observers_;
};

// Base of the test policies: one tenant, `streams` streams under the tenant's context.
class TestPolicy : public SharingMode {
 public:
  explicit TestPolicy(int streams = 1, device::ContextId context = context_for(0))
      : stream_count_(streams), context_(context) {}
  std::string_view name() const override { return "test-policy"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo>) override {
    device_ = &device;
    for (int i = 0; i < stream_count_; ++i) {
      device::StreamConfig config;
      config.context = context_;
      TESSERA_ASSIGN_OR_RETURN(const auto s, device.create_stream(config));
      streams_.push_back(s);
    }
    return {};
  }
  std::vector<PartitionInfo> partitions() const override { return {}; }

 protected:
  // Calls fn(kernel) for every kernel of `seq` in order.
  static void each_kernel(const workload::KernelSequence& seq,
                          const std::function<void(const workload::Kernel&)>& fn) {
    for (const auto& g : seq.groups) {
      for (int r = 0; r < g.repeat; ++r) {
        for (const auto& k : g.kernels) fn(k);
      }
    }
  }
  core::Status range(std::size_t stream, const workload::Kernel& k, std::int64_t begin,
                     std::int64_t end, device::DoneCallback done = {}) {
    return device_->submit_range(streams_[stream], workload::single_kernel(k),
                                 {.begin = begin, .end = end}, 0, std::move(done));
  }

  device::GpuDevice* device_ = nullptr;
  std::vector<device::StreamId> streams_;

 private:
  int stream_count_;
  device::ContextId context_;
};

// Correct: splits each kernel into two atoms on two streams, the second half first, and starts
// the next kernel only once both atoms are done.
class AtomizingPolicy final : public TestPolicy {
 public:
  AtomizingPolicy() : TestPolicy(2) {}
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t,
                      device::DoneCallback) override {
    each_kernel(*seq, [this](const workload::Kernel& k) { queue_.push_back(k); });
    if (outstanding_ == 0) next();
    return {};
  }

 private:
  void next() {
    if (queue_.empty()) return;
    const workload::Kernel k = queue_.front();
    queue_.pop_front();
    const auto one_done = [this](const device::SubmissionDone&) {
      if (--outstanding_ == 0) next();
    };
    if (!k.block_independent || k.blocks < 2) {
      outstanding_ = 1;
      (void)range(0, k, 0, k.blocks, one_done);
      return;
    }
    const std::int64_t half = k.blocks / 2;
    outstanding_ = 2;
    (void)range(1, k, half, k.blocks, one_done);
    (void)range(0, k, 0, half, one_done);
  }

  std::deque<workload::Kernel> queue_;
  int outstanding_ = 0;
};

// Broken: reshapes each grid to twice the blocks at half the work per block (same total work).
class ReshapingPolicy final : public TestPolicy {
 public:
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t tag,
                      device::DoneCallback done) override {
    workload::KernelSequence copy = *seq;
    for (auto& g : copy.groups) {
      for (auto& k : g.kernels) {
        k.blocks *= 2;
        k.flops_per_block /= 2;
      }
    }
    return device_->submit(streams_[0], std::make_shared<const workload::KernelSequence>(copy), tag,
                           std::move(done));
  }
};

// Broken: runs the first half of every kernel twice.
class RerunningPolicy final : public TestPolicy {
 public:
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t,
                      device::DoneCallback) override {
    each_kernel(*seq, [this](const workload::Kernel& k) {
      (void)range(0, k, 0, k.blocks / 2);
      (void)range(0, k, 0, k.blocks / 2);
      (void)range(0, k, k.blocks / 2, k.blocks);
    });
    return {};
  }
};

// Broken: never runs the first quarter of a kernel, yet reports the submission done.
class SkippingPolicy final : public TestPolicy {
 public:
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t,
                      device::DoneCallback done) override {
    std::vector<workload::Kernel> ks;
    each_kernel(*seq, [&ks](const workload::Kernel& k) { ks.push_back(k); });
    for (std::size_t i = 0; i < ks.size(); ++i) {
      (void)range(0, ks[i], ks[i].blocks / 4, ks[i].blocks,
                  i + 1 == ks.size() ? std::move(done) : device::DoneCallback{});
    }
    return {};
  }
};

// Broken: runs the first two kernels of each submission in swapped order.
class ReorderingPolicy final : public TestPolicy {
 public:
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t,
                      device::DoneCallback) override {
    std::vector<workload::Kernel> ks;
    each_kernel(*seq, [&ks](const workload::Kernel& k) { ks.push_back(k); });
    if (ks.size() >= 2) std::swap(ks[0], ks[1]);
    for (const auto& k : ks) (void)range(0, k, 0, k.blocks);
    return {};
  }
};

// Broken: starts each kernel on its own stream at once, so kernel i+1 overlaps kernel i.
class OverlappingPolicy final : public TestPolicy {
 public:
  OverlappingPolicy() : TestPolicy(4) {}
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t,
                      device::DoneCallback) override {
    std::size_t i = 0;
    each_kernel(*seq, [this, &i](const workload::Kernel& k) {
      (void)range(i++ % streams_.size(), k, 0, k.blocks);
    });
    return {};
  }
};

// Broken: halves every kernel, including ones that are not block-independent.
class SplitEverythingPolicy final : public TestPolicy {
 public:
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t,
                      device::DoneCallback) override {
    each_kernel(*seq, [this](const workload::Kernel& k) {
      (void)range(0, k, 0, k.blocks / 2);
      (void)range(0, k, k.blocks / 2, k.blocks);
    });
    return {};
  }
};

// Broken: runs the tenant's work under a context that is not the tenant's.
class WrongContextPolicy final : public TestPolicy {
 public:
  WrongContextPolicy() : TestPolicy(1, 77) {}
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t tag,
                      device::DoneCallback done) override {
    return device_->submit(streams_[0], std::move(seq), tag, std::move(done));
  }
};

// Forwards whole sequences untouched: correct. Rejects tenants other than 42 and sequences that
// start with a kernel named "rejected".
class PassThroughPolicy final : public TestPolicy {
 public:
  core::Status submit(TenantId tenant, workload::KernelSequencePtr seq, std::uint64_t tag,
                      device::DoneCallback done) override {
    if (tenant != 42 || seq->groups[0].kernels[0].name == "rejected") {
      return core::fail(core::Domain::kGpu, core::Code::kInvalidArgument, "rejected");
    }
    return device_->submit(streams_[0], std::move(seq), tag, std::move(done));
  }
};

const std::vector<TenantInfo> kOneTenant{{.id = 42, .name = "llm"}};

// Runs `seqs` through `policy` wrapped in CheckedMode on a RangeDevice and returns the verdict.
core::Status run_checked(std::unique_ptr<SharingMode> policy,
                         const std::vector<workload::KernelSequencePtr>& seqs,
                         std::int64_t* checked = nullptr, bool yield = false,
                         bool drop_after_yield = false) {
  test::ManualExecutor exec;
  RangeDevice dev(exec);
  dev.yield_launches = yield;
  dev.drop_after_yield = drop_after_yield;
  CheckedMode mode(std::move(policy));
  TESSERA_TRY(mode.attach(dev, kOneTenant));
  for (const auto& s : seqs) TESSERA_TRY(mode.submit(42, s, 0, {}));
  exec.run_all();
  if (checked) *checked = mode.checker().kernels_checked();
  return mode.verdict();
}

const auto kTwoKernels = [] { return sequence({kernel("qkv", 64), kernel("attn", 48)}); };

TEST(DeterminismChecker, PassesAnAtomizingPolicyWithOutOfOrderAtoms) {
  std::int64_t checked = 0;
  const auto st = run_checked(std::make_unique<AtomizingPolicy>(),
                              {kTwoKernels(), sequence({kernel("sync", 32, false)})}, &checked);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(checked, 3);
}

TEST(DeterminismChecker, WalksRepeatedGroupsInOrder) {
  workload::KernelSequence seq;
  seq.groups.push_back({.kernels = {kernel("a", 8), kernel("b", 8)}, .repeat = 3});
  seq.groups.push_back({.kernels = {}, .repeat = 2});  // empty groups are skipped
  seq.groups.push_back({.kernels = {kernel("c", 8)}, .repeat = 1});
  const auto ptr = std::make_shared<const workload::KernelSequence>(seq);
  std::int64_t checked = 0;
  const auto st = run_checked(std::make_unique<AtomizingPolicy>(), {ptr, ptr}, &checked);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(checked, 14);
}

TEST(DeterminismChecker, PassesYieldedLaunchesThatResume) {
  std::int64_t checked = 0;
  const auto st =
      run_checked(std::make_unique<PassThroughPolicy>(), {kTwoKernels()}, &checked, true);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(checked, 2);
}

TEST(DeterminismChecker, CatchesAYieldedKernelThatNeverResumes) {
  const auto st =
      run_checked(std::make_unique<PassThroughPolicy>(), {kTwoKernels()}, nullptr, true, true);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("after 'qkv' yielded"));
  EXPECT_THAT(st.error().message(), HasSubstr("'attn' ran instead"));
}

TEST(DeterminismChecker, CatchesAReshapedGrid) {
  const auto st = run_checked(std::make_unique<ReshapingPolicy>(), {kTwoKernels()});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().domain(), core::Domain::kGpu);
  EXPECT_EQ(st.error().code(), core::Code::kInternal);
  EXPECT_THAT(st.error().message(), HasSubstr("mode 'test-policy'"));
  EXPECT_THAT(st.error().message(), HasSubstr("tenant 'llm' (context 1)"));
  EXPECT_THAT(st.error().message(), HasSubstr("submission 0, kernel 0"));
  EXPECT_THAT(st.error().message(), HasSubstr("grid has 128 blocks instead of 64"));
}

// A broken policy, the work it runs, and what the checker's verdict must say about it.
struct BrokenPolicyCase {
  const char* name;
  std::function<std::unique_ptr<SharingMode>()> policy;
  std::function<workload::KernelSequencePtr()> work;
  const char* expected;
};

class CatchesBrokenPolicy : public ::testing::TestWithParam<BrokenPolicyCase> {};

TEST_P(CatchesBrokenPolicy, NamesTheViolation) {
  const auto& c = GetParam();
  const auto st = run_checked(c.policy(), {c.work()});
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr(c.expected));
}

template <typename Policy>
std::unique_ptr<SharingMode> make() {
  return std::make_unique<Policy>();
}

INSTANTIATE_TEST_SUITE_P(
    DeterminismChecker, CatchesBrokenPolicy,
    ::testing::Values(
        BrokenPolicyCase{"BlockRangeRunTwice", make<RerunningPolicy>, kTwoKernels,
                         "blocks [0, 32) of 'qkv' ran again"},
        BrokenPolicyCase{"SkippedRange", make<SkippingPolicy>, kTwoKernels,
                         "'qkv' had run 48 of its 64 blocks when"},
        BrokenPolicyCase{"SkippedRangeOfTheLastKernelAtTheEnd", make<SkippingPolicy>,
                         [] { return sequence({kernel("lm", 40)}); },
                         "reported done, but 10 of the 40 blocks of 'lm'"},
        BrokenPolicyCase{"ReorderedKernels", make<ReorderingPolicy>, kTwoKernels,
                         "expected 'qkv', but kernel 'attn' ran instead"},
        BrokenPolicyCase{"KernelStartingBeforeThePreviousEnded", make<OverlappingPolicy>,
                         kTwoKernels,
                         "'attn' started at 0 ns, before the previous kernel's last launch ended "
                         "at 10 ns"},
        BrokenPolicyCase{"SplitKernelThatIsNotBlockIndependent", make<SplitEverythingPolicy>,
                         [] { return sequence({kernel("allreduce", 16, false)}); },
                         "'allreduce' is not block-independent but ran blocks [0, 8) of [0, 16)"},
        BrokenPolicyCase{"WorkUnderAContextNobodySubmittedTo", make<WrongContextPolicy>,
                         kTwoKernels, "context 77, which no tenant submitted to"}),
    [](const ::testing::TestParamInfo<BrokenPolicyCase>& info) { return info.param.name; });

TEST(DeterminismChecker, FlagsRangesOutsideTheGridAndKernelsNobodySubmitted) {
  DeterminismChecker c;
  const auto seq = sequence({kernel("a", 8)});
  c.on_submit(3, seq);
  const workload::Kernel& k = seq->groups[0].kernels[0];
  c.on_kernel_complete(event(3, k, {0, 0}, 0, 5));
  ASSERT_TRUE(c.violation());
  EXPECT_THAT(c.violation()->message(), HasSubstr("blocks [0, 0), which is not a non-empty part"));

  DeterminismChecker extra;
  extra.on_submit(3, seq);
  auto e = event(3, k, {0, 8}, 0, 5);
  extra.on_kernel_complete(e);
  EXPECT_FALSE(extra.violation());
  EXPECT_EQ(extra.kernels_checked(), 1);
  e.start = 6;
  e.end = 7;
  extra.on_kernel_complete(e);
  ASSERT_TRUE(extra.violation());
  EXPECT_THAT(extra.violation()->message(), HasSubstr("after every kernel submitted had run"));
}

TEST(DeterminismChecker, CatchesChangedCheckpointsAndKind) {
  auto submitted = kernel("gemm", 8);
  submitted.checkpoints = 4;
  const auto seq = sequence({submitted});
  const workload::Kernel& k = seq->groups[0].kernels[0];

  auto fewer = k;
  fewer.checkpoints = 2;
  DeterminismChecker c;
  c.on_submit(3, seq);
  c.on_kernel_complete(event(3, fewer, {0, 8}, 0, 5));
  ASSERT_TRUE(c.violation());
  EXPECT_THAT(c.violation()->message(), HasSubstr("2 checkpoints instead of 4"));

  auto other = k;
  other.kind = workload::KernelClass::kReduction;
  DeterminismChecker d;
  d.on_submit(3, seq);
  d.on_kernel_complete(event(3, other, {0, 8}, 0, 5));
  ASSERT_TRUE(d.violation());
  EXPECT_THAT(d.violation()->message(), HasSubstr("reduction kernel instead of"));
}

// A rejected null submission is taken back without taking an earlier, still pending one with it,
// and an accepted null one counts as a submission that ran nothing.
TEST(DeterminismChecker, NullSubmissionsKeepTheCount) {
  DeterminismChecker c;
  const auto seq = sequence({kernel("a", 8)});
  const workload::Kernel& k = seq->groups[0].kernels[0];
  c.on_submit(3, seq);
  c.on_submit(3, nullptr);
  c.forget_last(3);
  EXPECT_EQ(c.on_submit(3, nullptr), 1);
  const auto after = c.on_submit(3, seq);
  EXPECT_EQ(after, 2);
  c.on_kernel_complete(event(3, k, {0, 8}, 0, 5));
  c.on_kernel_complete(event(3, k, {0, 8}, 6, 10));
  c.on_done(3, after);
  const auto& v = c.finish();
  EXPECT_FALSE(v) << v->message();
  EXPECT_EQ(c.kernels_checked(), 2);
}

TEST(DeterminismChecker, ARejectedSubmissionIsNotExpected) {
  test::ManualExecutor exec;
  RangeDevice dev(exec);
  CheckedMode mode(std::make_unique<PassThroughPolicy>());
  ASSERT_TRUE(mode.attach(dev, kOneTenant));
  EXPECT_FALSE(mode.submit(7, kTwoKernels(), 0, {}));  // unknown tenant: forwarded, not recorded
  // Recorded, then taken back when the mode rejects it: otherwise 'rejected' would be expected.
  EXPECT_FALSE(mode.submit(42, sequence({kernel("rejected", 4)}), 0, {}));
  ASSERT_TRUE(mode.submit(42, kTwoKernels(), 0, {}));
  exec.run_all();
  EXPECT_TRUE(mode.verdict());
  EXPECT_EQ(mode.checker().kernels_checked(), 2);
}

// Random tilings of random grids, atoms completing in random order: every exact tiling passes;
// the same tiling with one atom dropped (the kernel reported done) or one atom repeated fails.
TEST(DeterminismChecker, TilingPropertyOnRandomAtoms) {
  std::mt19937_64 rng(314159);  // fixed seed: the same cases every run
  enum class Break { kNone, kDrop, kRepeat };
  for (int trial = 0; trial < 300; ++trial) {
    const auto blocks = static_cast<std::int64_t>(1 + rng() % 200);
    const auto seq = sequence({kernel("k", blocks)});
    const workload::Kernel& k = seq->groups[0].kernels[0];
    std::vector<device::BlockRange> atoms;
    for (std::int64_t b = 0; b < blocks;) {
      const auto len = static_cast<std::int64_t>(1 + rng() % 40);
      atoms.push_back({.begin = b, .end = std::min(blocks, b + len)});
      b = atoms.back().end;
    }
    std::shuffle(atoms.begin(), atoms.end(), rng);
    const auto mode = static_cast<Break>(trial % 3);
    const bool drop = mode == Break::kDrop && atoms.size() > 1;
    if (drop) atoms.pop_back();
    if (mode == Break::kRepeat) {
      // Before the last atom, so the kernel is still being tiled when the repeat arrives.
      const auto copy = atoms[rng() % atoms.size()];
      atoms.insert(atoms.end() - 1, copy);
    }
    DeterminismChecker c;
    const auto number = c.on_submit(1, seq);
    for (const auto& a : atoms) {
      c.on_kernel_complete(event(1, k, a, 0, 10));
    }
    c.on_done(1, number);
    const bool broken = drop || mode == Break::kRepeat;
    EXPECT_EQ(c.finish().has_value(), broken)
        << "trial " << trial << ", " << blocks << " blocks, " << atoms.size() << " atoms";
    if (!broken) {
      EXPECT_EQ(c.kernels_checked(), 1) << "trial " << trial;
    }
  }
}

// The foundation's baselines, wrapped, on the fake device: two tenants, several submissions each.
class BaselinesOnFakeDevice : public ::testing::TestWithParam<const char*> {};

TEST_P(BaselinesOnFakeDevice, PassTheCheck) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  auto inner = make_sharing_mode(GetParam());
  ASSERT_TRUE(inner);
  CheckedMode mode(std::move(*inner));
  const std::vector<TenantInfo> ts{{.id = 5, .name = "a"}, {.id = 9, .name = "b"}};
  const bool exclusive = std::string_view(GetParam()) == "exclusive";
  ASSERT_TRUE(mode.attach(dev, exclusive ? std::span(ts).first(1) : std::span(ts)));
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    for (const auto& t : ts) {
      if (exclusive && t.id != 5) continue;
      ASSERT_TRUE(mode.submit(t.id, test::sequence_of({1000, 500, 2000}, 2), 0,
                              [&done](const auto&) { ++done; }));
    }
  }
  exec.run_all();
  const auto st = mode.verdict();
  ASSERT_TRUE(st) << st.error().message();
  const int tenants = exclusive ? 1 : 2;
  EXPECT_EQ(done, 3 * tenants);
  EXPECT_EQ(mode.checker().kernels_checked(), 3 * 6 * tenants);
  EXPECT_EQ(mode.name(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Modes, BaselinesOnFakeDevice,
                         ::testing::Values("exclusive", "time-slicing", "mps",
                                           "static-partitions"));

}  // namespace
}  // namespace tessera::gpu
