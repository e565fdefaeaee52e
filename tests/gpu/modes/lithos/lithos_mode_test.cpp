// The lithos sharing mode on the simulated GPU (the synthetic TestGpu, 8 TPCs of 2 SMs, where a
// block of 1e6 FP32 FLOPs takes 1 us on one SM) and, for attach and submit checks, on the fake
// device. Every run goes through CheckedMode, so the determinism invariant (every block of every
// kernel exactly once, in order, with its own launch configuration) is checked on all of them.

#include "tessera/gpu/modes/lithos/lithos_mode.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "gpu/mode_test_util.hpp"
#include "support/fakes/forwarding_gpu_device.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/tenant/inference_server.hpp"
#include "tessera/tenant/training_job.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

constexpr core::Nanos kAtom = core::micros(250);

sim::SimGpuOptions sim_options() {
  auto o = test::exact_options(/*batch=*/false);
  o.launch_overhead = core::micros(2);
  return o;
}

// One block of 1e7 FLOPs: 10 us per wave on any SM count. 1600 blocks on all 16 SMs: 1 ms.
workload::Kernel big(std::string_view name = "big", bool independent = true) {
  auto k = test::make_kernel(name, 1600, 1e7, 0);
  k.block_independent = independent;
  return k;
}
// 32 blocks of 1e6 FLOPs: 2 us on 16 SMs.
workload::Kernel small(std::string_view name) {
  return test::make_kernel(name, 32, 1e6, 0);
}

std::vector<TenantInfo> chat_and_train() {
  return {TenantInfo{.id = 10, .name = "chat", .latency_critical = true, .priority = 1},
          TenantInfo{.id = 11, .name = "train"}};
}

// A SimGpu with lithos (wrapped in the determinism checker) attached, and an event log.
struct Rig {
  explicit Rig(LithosOptions options = {}, std::vector<TenantInfo> infos = chat_and_train(),
               sim::SimGpuOptions sim = sim_options())
      : gpu(engine, test::TestGpu().build(), sim),
        mode(std::make_unique<LithosMode>(options)),
        lithos(static_cast<LithosMode*>(mode.get())),
        checked(std::move(mode)) {
    gpu.add_observer(&log);
    const auto ok = checked.attach(gpu, infos);
    EXPECT_TRUE(ok) << ok.error().message();
  }

  // Submits `seq` as tenant `id` now, and again from its done callback `times` - 1 more times.
  void repeat(TenantId id, workload::KernelSequencePtr seq, int times,
              std::vector<core::Nanos>* durations = nullptr) {
    auto next = std::make_shared<std::function<void(int)>>();
    // `keep` owns the function; holding itself by shared_ptr, it would never be freed.
    const std::weak_ptr<std::function<void(int)>> self = next;
    *next = [=, this](int left) {
      const auto ok = checked.submit(id, seq, static_cast<std::uint64_t>(left),
                                     [=](const device::SubmissionDone& d) {
                                       if (durations)
                                         durations->push_back(d.finished - d.submitted);
                                       if (left > 1) (*self.lock())(left - 1);
                                     });
      EXPECT_TRUE(ok) << ok.error().message();
    };
    (*next)(times);
    keep.push_back(next);
  }

  void finish() {
    engine.run_until(core::kNever);
    const auto verdict = checked.verdict();
    EXPECT_TRUE(verdict) << verdict.error().message();
  }

  double counter(std::string_view name) const {
    for (const auto& c : lithos->counters()) {
      if (c.name == name) return c.value;
    }
    ADD_FAILURE() << "no counter " << name;
    return 0;
  }

  std::vector<test::Recorded> of_context(device::ContextId c) const {
    std::vector<test::Recorded> out;
    for (const auto& e : log.events) {
      if (e.context == c) out.push_back(e);
    }
    return out;
  }

  sim::Engine engine;
  sim::SimGpu gpu;
  test::EventLog log;
  std::unique_ptr<SharingMode> mode;
  LithosMode* lithos;
  CheckedMode checked;
  std::vector<std::shared_ptr<std::function<void(int)>>> keep;
};

constexpr device::ContextId kChat = 1;  // context_for(0)
constexpr device::ContextId kTrain = 2;

TEST(LithosMode, AttachNeedsSmPartitionsAndBlockRanges) {
  test::ManualExecutor ex;
  auto caps = test::all_capabilities();
  caps.block_ranges = false;
  test::FakeDevice fake(ex, test::fake_spec(), caps);
  LithosMode mode{LithosOptions{}};
  const auto ok = mode.attach(fake, chat_and_train());
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), core::Code::kUnsupported);
  EXPECT_THAT(ok.error().message(), HasSubstr("lacks block-range launches"));
  EXPECT_THAT(ok.error().message(), HasSubstr("choose mps or time-slicing"));
}

TEST(LithosMode, DvfsNeedsClockControl) {
  test::ManualExecutor ex;
  auto caps = test::all_capabilities();
  caps.block_ranges = true;
  caps.clock_control = false;
  test::FakeDevice fake(ex, test::fake_spec(), caps);
  LithosMode mode{LithosOptions{.dvfs = true}};
  const auto ok = mode.attach(fake, chat_and_train());
  ASSERT_FALSE(ok);
  EXPECT_THAT(ok.error().message(), HasSubstr("turn dvfs off"));
}

TEST(LithosMode, RejectsBadInputWithoutRunningAnything) {
  Rig rig;
  auto too_wide = small("wide");
  too_wide.block.threads = 4096;  // more than a block may have
  const auto bad_kernel = rig.checked.submit(11, test::sequence_of({too_wide}), 1, nullptr);
  ASSERT_FALSE(bad_kernel);
  EXPECT_THAT(bad_kernel.error().message(), HasSubstr("tenant 'train'"));
  const auto bad_tenant = rig.checked.submit(99, test::sequence_of({small("a")}), 1, nullptr);
  ASSERT_FALSE(bad_tenant);
  EXPECT_FALSE(rig.checked.submit(10, nullptr, 1, nullptr));
  rig.finish();
  EXPECT_TRUE(rig.log.events.empty());
  EXPECT_FALSE(rig.lithos->attach(rig.gpu, chat_and_train()));  // attached once only
}

// Forwards to a FakeDevice, but once `refuse` is set every launch fails, as on a lost device.
class RefusingDevice final : public test::ForwardingGpuDevice {
 public:
  using ForwardingGpuDevice::ForwardingGpuDevice;
  bool refuse = false;

  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override {
    if (refuse) return lost();
    return ForwardingGpuDevice::submit(stream, std::move(sequence), tag, std::move(done));
  }
  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override {
    if (refuse) return lost();
    return ForwardingGpuDevice::submit_range(stream, std::move(sequence), range, tag,
                                             std::move(done));
  }

 private:
  static core::Status lost() {
    return core::fail(core::Domain::kDevice, core::Code::kFailedPrecondition, "device lost");
  }
};

// A launch made while handling a submission fails: that submit says so, and so does every later
// one, rather than the error waiting for a submission that may never come.
TEST(LithosMode, AFailedLaunchFailsTheSubmitThatMadeIt) {
  test::ManualExecutor ex;
  auto caps = test::all_capabilities();
  caps.block_ranges = true;
  test::FakeDevice fake(ex, test::fake_spec(), caps);
  RefusingDevice dev(fake);
  LithosMode mode{LithosOptions{}};
  ASSERT_TRUE(mode.attach(dev, chat_and_train()));
  dev.refuse = true;
  const auto first = mode.submit(10, test::sequence_of({small("a")}), 1, nullptr);
  ASSERT_FALSE(first);
  EXPECT_THAT(first.error().message(), HasSubstr("device lost"));
  const auto later = mode.submit(11, test::sequence_of({small("b")}), 2, nullptr);
  ASSERT_FALSE(later);
  EXPECT_THAT(later.error().message(), HasSubstr("device lost"));
}

TEST(LithosMode, RegistryMakesIt) {
  const auto mode = make_sharing_mode("lithos");
  ASSERT_TRUE(mode);
  EXPECT_EQ((*mode)->name(), "lithos");
}

TEST(LithosMode, PartitionsAreTheOwnersTpcs) {
  Rig rig;
  const auto parts = rig.lithos->partitions();
  ASSERT_EQ(parts.size(), 1u);  // the best-effort tenant owns nothing
  EXPECT_EQ(parts[0].name, "chat");
  EXPECT_EQ(parts[0].sms.count(), 16);
  EXPECT_EQ(parts[0].tenants, std::vector<TenantId>{10});
}

TEST(LithosMode, BestEffortAloneUsesTheWholeGpuInAtoms) {
  Rig rig(LithosOptions{.atom_duration = kAtom});
  const auto seq = test::sequence_of({big()}, 5);
  std::vector<core::Nanos> took;
  rig.repeat(11, seq, 1, &took);
  rig.finish();
  const auto events = rig.of_context(kTrain);
  ASSERT_GT(events.size(), 5u);
  for (const auto& e : events) EXPECT_EQ(e.sms, 16) << test::EventLog::line(e);
  // The first launch is whole (no profile yet); later ones are atoms no longer than the target
  // plus the launch costs that the prediction spreads over the grid.
  EXPECT_EQ(events.front().blocks, (device::BlockRange{.begin = 0, .end = 1600}));
  const auto o = sim_options();
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_LT(events[i].blocks.size(), 1600);
    EXPECT_LE(events[i].end - events[i].start, kAtom + o.launch_overhead + o.atom_launch_overhead);
  }
  EXPECT_EQ(rig.counter("atoms"), static_cast<double>(events.size() - 1));
  EXPECT_EQ(rig.counter("kernels_whole"), 1);
  EXPECT_EQ(rig.counter("tpc_lendings"), 8.0 * static_cast<double>(events.size()));
  // Nothing lost against running alone but the per-piece launch costs.
  const core::Nanos alone = test::run_alone(test::TestGpu().build(), o, seq);
  ASSERT_EQ(took.size(), 1u);
  EXPECT_LE(took[0], alone + static_cast<core::Nanos>(events.size()) *
                                 (o.launch_overhead + o.atom_launch_overhead));
}

// Walks one tenant's events in order: each kernel's ranges start at 0, follow each other and end
// at its grid; the names come in the order submitted.
void expect_tiled_in_order(const std::vector<test::Recorded>& events,
                           const std::vector<std::string>& names) {
  std::int64_t next = 0;
  std::size_t kernel = 0;
  for (const auto& e : events) {
    ASSERT_LT(kernel, names.size()) << test::EventLog::line(e);
    EXPECT_EQ(e.name, names[kernel]) << test::EventLog::line(e);
    EXPECT_EQ(e.blocks.begin, next) << test::EventLog::line(e);
    next = e.blocks.end;
    if (next == e.kernel->blocks) {
      next = 0;
      ++kernel;
    }
  }
  EXPECT_EQ(kernel, names.size());
  EXPECT_EQ(next, 0);
}

TEST(LithosMode, AtomsTileEveryKernelAndOrderIsKeptWithinEachTenant) {
  Rig rig(LithosOptions{.atom_duration = core::micros(60)});
  const auto train = test::sequence_of({big("fwd"), big("bwd"), small("opt")}, 2);
  const auto chat = test::sequence_of({small("qkv"), small("attn"), small("mlp")}, 3);
  rig.repeat(11, train, 3);
  for (int i = 0; i < 6; ++i) {
    rig.engine.schedule_at(core::micros(700 + 1100 * i), [&rig, chat] { rig.repeat(10, chat, 1); });
  }
  rig.finish();
  std::vector<std::string> train_names, chat_names;
  for (int s = 0; s < 3; ++s) {
    for (int r = 0; r < 2; ++r) train_names.insert(train_names.end(), {"fwd", "bwd", "opt"});
  }
  for (int s = 0; s < 6; ++s) {
    for (int r = 0; r < 3; ++r) chat_names.insert(chat_names.end(), {"qkv", "attn", "mlp"});
  }
  expect_tiled_in_order(rig.of_context(kTrain), train_names);
  expect_tiled_in_order(rig.of_context(kChat), chat_names);
  EXPECT_GT(rig.counter("atoms"), 0);
  EXPECT_GT(rig.checked.checker().kernels_checked(), 0);
}

TEST(LithosMode, NonSplittableKernelsAlwaysRunWhole) {
  Rig rig(LithosOptions{.atom_duration = core::micros(50)});
  rig.repeat(11, test::sequence_of({big("allreduce", /*independent=*/false)}, 3), 1);
  rig.finish();
  const auto events = rig.of_context(kTrain);
  ASSERT_EQ(events.size(), 3u);
  for (const auto& e : events) {
    EXPECT_EQ(e.blocks, (device::BlockRange{.begin = 0, .end = 1600}));
  }
  EXPECT_EQ(rig.counter("kernels_not_splittable"), 3);
  EXPECT_EQ(rig.counter("atoms"), 0);
}

TEST(LithosMode, OwnerArrivalWaitsAtMostOneAtomForItsTpcs) {
  Rig rig(LithosOptions{.atom_duration = kAtom});
  rig.repeat(11, test::sequence_of({big()}, 20), 1);  // 20 ms of best-effort work
  const auto chat = test::sequence_of({small("qkv"), small("attn"), small("mlp")}, 4);
  const auto o = sim_options();
  const core::Nanos chat_alone = test::run_alone(test::TestGpu().build(), o, chat);
  std::vector<core::Nanos> arrivals;
  std::vector<core::Nanos> took;
  for (int i = 0; i < 8; ++i) {
    // Arrivals at odd offsets, so they land inside best-effort atoms.
    const core::Nanos at = core::micros(2000 + 1777 * i);
    arrivals.push_back(at);
    rig.engine.schedule_at(at, [&rig, chat, &took] { rig.repeat(10, chat, 1, &took); });
  }
  rig.finish();
  const auto chat_events = rig.of_context(kChat);
  ASSERT_EQ(took.size(), arrivals.size());
  const core::Nanos one_atom = kAtom + o.launch_overhead + o.atom_launch_overhead;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    const auto& first = chat_events[i * 12];
    EXPECT_EQ(first.name, "qkv");
    EXPECT_LE(first.start - arrivals[i], one_atom) << "arrival " << i;
    // The owner keeps its TPCs for its whole submission: only the first kernel waited.
    EXPECT_LE(took[i], chat_alone + one_atom) << "arrival " << i;
  }
  EXPECT_GT(rig.counter("hp_waits"), 0);
  EXPECT_LE(rig.counter("mean_hp_wait_us"), core::to_micros(one_atom));
  EXPECT_GT(rig.counter("tpc_seconds_lent"), 0);
}

// On the fake device (kernels run for FLOPs / 1 ns whatever SMs they get, streams side by side):
// the owner takes back TPCs from a borrowed launch, finishes before it, and the TPCs stay with
// the borrower's launch until it ends instead of being lent again on top of it.
TEST(LithosMode, TpcsTakenBackAndReleasedGoBackToTheLaunchStillOnThem) {
  test::ManualExecutor ex;
  auto caps = test::all_capabilities();
  caps.block_ranges = true;
  test::FakeDevice fake(ex, test::fake_spec(), caps);
  LithosMode mode{LithosOptions{}};
  const std::vector<TenantInfo> infos{
      {.id = 10, .name = "chat", .latency_critical = true, .priority = 1},
      {.id = 11, .name = "train", .priority = 1},
      {.id = 12, .name = "extra", .priority = 0}};
  ASSERT_TRUE(mode.attach(fake, infos));
  // 16 blocks: a grid that spreads over all 8 TPCs.
  const auto wide = [](double total_flops) {
    auto k = test::make_kernel("wide", 16, total_flops / 16, 0);
    return test::sequence_of({k});
  };
  ASSERT_TRUE(mode.submit(11, wide(1000), 1, nullptr));
  ASSERT_TRUE(mode.submit(12, wide(100), 2, nullptr));
  ex.schedule_at(10, [&] { ASSERT_TRUE(mode.submit(10, wide(5), 3, nullptr)); });
  ex.run_all();
  std::map<std::uint64_t, test::KernelRun> by_tag;
  for (const auto& r : fake.runs()) by_tag.emplace(r.tag, r);
  ASSERT_EQ(by_tag.size(), 3u);
  EXPECT_EQ(by_tag.at(1).start, 0);   // train borrows every TPC
  EXPECT_EQ(by_tag.at(3).start, 10);  // chat takes its TPCs back on arrival
  EXPECT_EQ(by_tag.at(3).end, 15);
  EXPECT_EQ(by_tag.at(2).start, 1000);  // extra waits for train's launch to leave them
  EXPECT_EQ(by_tag.at(1).config.sms.count(), 16);
  EXPECT_EQ(by_tag.at(3).config.sms.count(), 16);
}

TEST(LithosMode, RightSizingGivesFewerTpcsToAKernelThatDoesNotScale) {
  // One SM draws at most 200 bytes/ns of the device's 1600: a kernel of pure DRAM traffic runs
  // as fast on 4 TPCs as on 8, while a compute kernel needs all 8.
  const auto memory = test::make_kernel("stream", 64, 1, 4e6);
  const auto compute = test::make_kernel("gemm", 64, 1e7, 0);
  const std::vector<TenantInfo> alone{
      TenantInfo{.id = 10, .name = "chat", .latency_critical = true, .priority = 1}};
  Rig rig(LithosOptions{.right_sizing = true, .latency_slip = 0.1}, alone);
  rig.repeat(10, test::sequence_of({memory, compute}), 20);
  rig.finish();
  std::map<std::string, std::vector<test::Recorded>> runs;
  for (const auto& e : rig.of_context(kChat)) runs[e.name].push_back(e);
  ASSERT_EQ(runs["stream"].size(), 20u);
  ASSERT_EQ(runs["gemm"].size(), 20u);
  const auto took = [](const test::Recorded& e) { return static_cast<double>(e.end - e.start); };
  // The walk down from all 8 TPCs stops at 4, the fewest whose 8 SMs still draw the device's
  // whole bandwidth; the compute kernel stays on all 8.
  for (std::size_t i = 10; i < 20; ++i) {
    EXPECT_EQ(runs["stream"][i].sms, 8) << "run " << i;
    EXPECT_LE(took(runs["stream"][i]), 1.1 * took(runs["stream"][0])) << "run " << i;
    EXPECT_EQ(runs["gemm"][i].sms, 16) << "run " << i;
  }
  // Each kernel tries at most one count that turns out slower than the slip allows.
  for (const auto& name : {"stream", "gemm"}) {
    const auto& r = runs[name];
    EXPECT_LE(std::count_if(r.begin(), r.end(),
                            [&](const auto& e) { return took(e) > 1.1 * took(r.front()); }),
              1)
        << name;
  }
  // It measured the counts it walked through: 8 down to 3 (too slow) for the memory kernel.
  EXPECT_EQ(rig.lithos->profiles().samples(memory).size(), 6u);
  EXPECT_GT(rig.counter("tpc_seconds_saved"), 0);
  EXPECT_LT(rig.counter("mean_tpcs_allocated"), 8);
}

// A submission of compute- and memory-bound kernels, resubmitted back to back; with dvfs the
// governor lowers the clock, and no submission gets slower than latency_slip allows.
std::vector<core::Nanos> run_dvfs(bool dvfs, double slip, Rig** out = nullptr) {
  const auto memory = test::make_kernel("stream", 64, 1, 4e6);
  const auto compute = test::make_kernel("gemm", 64, 1e7, 0);
  const std::vector<TenantInfo> alone{
      TenantInfo{.id = 10, .name = "chat", .latency_critical = true, .priority = 1}};
  static std::unique_ptr<Rig> keep;
  keep = std::make_unique<Rig>(LithosOptions{.dvfs = dvfs, .latency_slip = slip}, alone);
  std::vector<core::Nanos> took;
  keep->repeat(10, test::sequence_of({compute, memory, memory, memory}), 30, &took);
  keep->finish();
  if (out) *out = keep.get();
  return took;
}

TEST(LithosMode, DvfsNeverSlowsASubmissionBeyondTheSlip) {
  constexpr double kSlip = 0.1;
  const auto base = run_dvfs(false, kSlip);
  Rig* rig = nullptr;
  const auto scaled = run_dvfs(true, kSlip, &rig);
  ASSERT_EQ(base.size(), 30u);
  ASSERT_EQ(scaled.size(), 30u);
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    EXPECT_LE(static_cast<double>(scaled[i]), (1 + kSlip) * static_cast<double>(base[i]) + 1)
        << "submission " << i;
  }
  EXPECT_GT(rig->counter("clock_changes"), 0);
  EXPECT_LT(rig->gpu.clock_mhz(), test::TestGpu().build().boost_clock_mhz);
  ASSERT_NE(rig->lithos->governor(), nullptr);
  EXPECT_LE(rig->lithos->governor()->predicted_slowdown(rig->gpu.clock_mhz()), 1 + kSlip);
}

// End to end on an H100 from the catalog: an LLM decode tenant (latency-critical) next to a
// ResNet-50 training job, as the demo runs them.
struct Served {
  metrics::InferenceSummary chat;
  std::size_t iterations = 0;
  std::vector<ModeCounter> counters;
};

Served serve(std::string_view mode_name, bool with_training) {
  constexpr core::Nanos kHorizon = core::seconds(3);
  sim::Engine engine;
  const auto spec = hw::find_gpu("h100");
  EXPECT_TRUE(spec);
  sim::SimGpu gpu(engine, spec.value());
  auto made = make_sharing_mode(mode_name);
  EXPECT_TRUE(made);
  CheckedMode mode(std::move(made.value()));
  std::vector<TenantInfo> infos{{.id = 0, .name = "chat", .latency_critical = true, .priority = 1}};
  if (with_training) infos.push_back({.id = 1, .name = "train"});
  const auto attached = mode.attach(gpu, infos);
  EXPECT_TRUE(attached) << attached.error().message();
  std::vector<workload::Request> requests;
  for (int i = 0; i < 12; ++i) {
    requests.push_back(workload::Request{.id = static_cast<std::uint64_t>(i),
                                         .arrival = core::millis(40) * i,
                                         .input_tokens = 256 + 64 * (i % 4),
                                         .output_tokens = 24});
  }
  const auto model = workload::find_model("llama-3-8b");
  EXPECT_TRUE(model);
  tenant::InferenceServer server(0, {.name = "chat", .model = model.value(), .slo = {}}, requests,
                                 mode, engine);
  server.start();
  std::unique_ptr<tenant::TrainingJob> job;
  if (with_training) {
    const auto resnet = workload::find_training_model("resnet-50");
    EXPECT_TRUE(resnet);
    job = std::make_unique<tenant::TrainingJob>(
        1, tenant::TrainingConfig{.name = "train", .model = resnet.value()}, mode, engine);
    job->start();
  }
  engine.run_until(kHorizon);
  EXPECT_FALSE(server.failure());
  const auto verdict = mode.verdict();
  EXPECT_TRUE(verdict) << verdict.error().message();
  Served out;
  out.chat = metrics::summarize_inference(server.records(), {}, kHorizon);
  if (job) {
    EXPECT_FALSE(job->failure());
    out.iterations = job->iterations().size();
  }
  out.counters = mode.counters();
  return out;
}

TEST(LithosModeEndToEnd, DecodeTailStaysNearAloneWhereMpsDoesNot) {
  const Served alone = serve("exclusive", false);
  const Served mps = serve("mps", true);
  const Served lithos = serve("lithos", true);
  for (const auto* s : {&alone, &mps, &lithos}) ASSERT_EQ(s->chat.completed, 12u);
  const double base = alone.chat.tpot_ms.p99;
  const double mps_excess = mps.chat.tpot_ms.p99 - base;
  const double lithos_excess = lithos.chat.tpot_ms.p99 - base;
  RecordProperty("tpot_p99_ms_alone", std::to_string(base));
  RecordProperty("tpot_p99_ms_mps", std::to_string(mps.chat.tpot_ms.p99));
  RecordProperty("tpot_p99_ms_lithos", std::to_string(lithos.chat.tpot_ms.p99));
  EXPECT_GT(mps_excess, 0);
  EXPECT_LT(lithos_excess, mps_excess / 2);
  EXPECT_GT(lithos.iterations, 0u);
}

}  // namespace
}  // namespace tessera::gpu
