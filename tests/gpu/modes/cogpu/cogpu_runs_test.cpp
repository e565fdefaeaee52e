// The cogpu runtime feeds a context's kernels in runs on a device that can end a submission early
// (Capabilities::early_end). Runs must change nothing but the number of device submissions: the
// same workload on the same simulated GPU, with early end hidden from the runtime (one kernel per
// submission), must give the same kernels at the same times on the same SMs, the same
// submissions done at the same times, and the same counters. (Two kernels that end in the same
// nanosecond may be reported in either order: their events are compared sorted by end.)

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "support/fakes/forwarding_gpu_device.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"
#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::gpu {
namespace {

// The simulated GPU, with or without early end, counting the runtime's submissions.
class CountingDevice final : public test::ForwardingGpuDevice {
 public:
  CountingDevice(device::GpuDevice& inner, bool early_end)
      : ForwardingGpuDevice(inner), early_end_(early_end) {}
  device::Capabilities capabilities() const override {
    auto caps = ForwardingGpuDevice::capabilities();
    caps.early_end = early_end_;
    return caps;
  }
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override {
    ++submissions;
    return ForwardingGpuDevice::submit(stream, std::move(sequence), tag, std::move(done));
  }
  core::Status submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                           device::KernelSpan span, std::uint64_t tag,
                           device::DoneCallback done) override {
    ++submissions;
    if (span.count > 1) ++runs;
    return ForwardingGpuDevice::submit_span(stream, std::move(sequence), span, tag,
                                            std::move(done));
  }
  core::Status end_after_head(device::StreamId stream) override {
    ++ended_early;
    return ForwardingGpuDevice::end_after_head(stream);
  }
  int submissions = 0;
  int runs = 0;
  int ended_early = 0;

 private:
  bool early_end_;
};

using Launch = std::tuple<device::StreamId, std::string, core::Nanos, core::Nanos, int, bool>;

class Launches final : public device::DeviceObserver {
 public:
  void on_kernel_complete(const device::KernelEvent& e) override {
    list.emplace_back(e.stream, std::string(e.kernel->name), e.start, e.end, e.sms, e.yielded);
  }
  std::vector<Launch> list;
};

struct Outcome {
  std::vector<Launch> launches;
  std::vector<std::tuple<TenantId, std::uint64_t, core::Nanos>> done;
  std::vector<ModeCounter> counters;
  int submissions = 0;
  int runs = 0;
  int ended_early = 0;
};

// A chat tenant serving bursts of steps with pauses between them (so the policy grows and
// shrinks its partition, and residencies end while it is busy and while it is idle), beside a
// ResNet-50 trainer that never stops.
Outcome serve(std::string_view policy, core::Nanos residency, bool early_end) {
  sim::Engine engine;
  auto spec = hw::find_gpu("h100");
  EXPECT_TRUE(spec);
  sim::SimGpu gpu(engine, spec.value());
  CountingDevice device(gpu, early_end);
  Launches launches;
  gpu.add_observer(&launches);
  std::unique_ptr<RemapPolicy> remap;
  if (policy == "cogpu") remap = std::make_unique<CoGpuPolicy>();
  if (policy == "tpot-first") remap = std::make_unique<TpotFirstPolicy>();
  EXPECT_NE(remap, nullptr) << policy;
  CheckedMode mode(std::make_unique<CoGpuMode>(
      CoGpuOptions{.remap_cost = core::micros(10), .remap_min_residency = residency},
      std::move(remap)));
  const std::vector<TenantInfo> tenants = {{.id = 0,
                                            .name = "chat",
                                            .latency_critical = true,
                                            .priority = 10,
                                            .ttft_slo = core::millis(200),
                                            .tpot_slo = core::millis(30)},
                                           {.id = 1, .name = "train"}};
  const auto attached = mode.attach(device, tenants);
  EXPECT_TRUE(attached) << attached.error().message();

  Outcome out;
  const auto model = workload::find_model("llama-3-8b");
  EXPECT_TRUE(model);
  const std::vector<int> contexts(16, 1024);
  const auto step = std::make_shared<const workload::KernelSequence>(
      workload::decode_step(model.value(), contexts));
  const auto resnet = workload::find_training_model("resnet-50");
  EXPECT_TRUE(resnet);
  const auto iteration = std::make_shared<const workload::KernelSequence>(
      resnet.value().iteration(resnet->default_batch, workload::Precision::kBf16));

  constexpr core::Nanos kEnd = core::seconds(3);
  std::function<void(const device::SubmissionDone&)> train = [&](const device::SubmissionDone& d) {
    out.done.emplace_back(1, d.tag, d.finished);
    if (engine.now() < kEnd) {
      EXPECT_TRUE(mode.submit(1, iteration, d.tag + 1, train));
    }
  };
  EXPECT_TRUE(mode.submit(1, iteration, 0, train));
  // Bursts, one every 37 ms: a prefill, then decode steps. Every other burst's prefill pauses
  // running requests (mid-generation). The policies size a fresh prefill, a prefill that delays
  // tokens and a decode step differently, and see a burst's phase change at its prefill's last
  // kernel.
  const std::vector<int> prompts = {32};
  auto prefill_of = [&](bool mid_generation) {
    workload::KernelSequence seq = workload::prefill_step(model.value(), prompts);
    seq.mid_generation = mid_generation;
    return std::make_shared<const workload::KernelSequence>(std::move(seq));
  };
  const workload::KernelSequencePtr prefills[] = {prefill_of(false), prefill_of(true)};
  int steps = 0;
  std::function<void(const device::SubmissionDone&)> chat = [&](const device::SubmissionDone& d) {
    out.done.emplace_back(0, d.tag, d.finished);
    if (++steps % 4 != 0) {
      EXPECT_TRUE(mode.submit(0, step, d.tag + 1, chat));
    }
  };
  int burst = 0;
  for (core::Nanos at = core::millis(5); at < kEnd; at += core::millis(37), ++burst) {
    engine.schedule_at(at, [&, at, prefill = prefills[burst % 2]] {
      EXPECT_TRUE(mode.submit(0, prefill, at, chat));
    });
  }
  engine.run_until(core::kNever);  // until every kernel has ended
  const auto verdict = mode.verdict();
  EXPECT_TRUE(verdict) << verdict.error().message();
  out.launches = std::move(launches.list);
  out.counters = mode.counters();
  out.submissions = device.submissions;
  out.runs = device.runs;
  out.ended_early = device.ended_early;
  return out;
}

// A policy, and the minimum residency of a latency-critical partition: the default, and one long
// enough that residencies often end in the middle of a step.
using Setup = std::tuple<std::string, core::Nanos>;

class CoGpuRuns : public ::testing::TestWithParam<Setup> {};

TEST_P(CoGpuRuns, GiveTheSameRunAsFeedingKernelByKernel) {
  const auto& [policy, residency] = GetParam();
  Outcome by_kernel = serve(policy, residency, false);
  Outcome in_runs = serve(policy, residency, true);
  ASSERT_GT(by_kernel.launches.size(), 10000u);
  EXPECT_EQ(by_kernel.runs, 0);
  EXPECT_EQ(by_kernel.submissions, static_cast<int>(by_kernel.launches.size()));
  // Runs were used, and ended early where a context had to move.
  EXPECT_GT(in_runs.runs, 0);
  EXPECT_GT(in_runs.ended_early, 0);
  EXPECT_LT(in_runs.submissions * 5, by_kernel.submissions);

  ASSERT_EQ(in_runs.launches.size(), by_kernel.launches.size());
  auto by_end = [](const Launch& a, const Launch& b) {
    return std::tie(std::get<3>(a), std::get<0>(a)) < std::tie(std::get<3>(b), std::get<0>(b));
  };
  std::stable_sort(in_runs.launches.begin(), in_runs.launches.end(), by_end);
  std::stable_sort(by_kernel.launches.begin(), by_kernel.launches.end(), by_end);
  for (std::size_t i = 0; i < by_kernel.launches.size(); ++i) {
    ASSERT_EQ(in_runs.launches[i], by_kernel.launches[i]) << "launch " << i;
  }
  EXPECT_EQ(in_runs.done, by_kernel.done);
  ASSERT_EQ(in_runs.counters.size(), by_kernel.counters.size());
  for (std::size_t i = 0; i < by_kernel.counters.size(); ++i) {
    EXPECT_EQ(in_runs.counters[i].name, by_kernel.counters[i].name);
    EXPECT_EQ(in_runs.counters[i].value, by_kernel.counters[i].value) << by_kernel.counters[i].name;
  }
  double remaps = 0;
  for (const auto& c : by_kernel.counters) {
    if (c.name == "remaps") remaps = c.value;
  }
  EXPECT_GT(remaps, 10) << "the workload must make the policy move partitions";
}

INSTANTIATE_TEST_SUITE_P(Policies, CoGpuRuns,
                         ::testing::Combine(::testing::Values("cogpu", "tpot-first"),
                                            ::testing::Values(core::millis(2), core::millis(15))),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param);
                           std::erase(name, '-');
                           return fmt::format("{}_residency{}ms", name,
                                              core::to_millis(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace tessera::gpu
