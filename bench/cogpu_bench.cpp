// Cost of the cogpu runtime's scheduling per kernel launch, without a simulator behind it: the
// issue's goal is a median under 1 us per launch.
//   ./build/bench/tessera_cogpu_bench
//
// BM_CoGpuDecide / BM_TpotFirstDecide: one policy decision (snapshot in, sizes out) for N
//   tenants on an H100's grid, half of them latency-critical with SLOs and observations.
// BM_CoGpuLaunch: the whole path one kernel completion takes through CoGpuMode (policy decision,
//   partition plan, migration state machine, the next launch) for a decode tenant and a training
//   tenant, on a device that only records launches, so the figure is the runtime's own cost.

#include <benchmark/benchmark.h>

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"
#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using namespace tessera;

gpu::RemapSnapshot snapshot(int tenants) {
  gpu::RemapSnapshot s{.now = core::seconds(1),
                       .grid = *gpu::PartitionGrid::of(*hw::find_gpu("h100")),
                       .min_residency = core::millis(2),
                       .tenants = {}};
  for (int i = 0; i < tenants; ++i) {
    gpu::TenantSnapshot t{
        .id = static_cast<gpu::TenantId>(i),
        .latency_critical = i % 2 == 0,
        .ttft_slo = core::millis(500),
        .tpot_slo = core::millis(50),
        .has_work = true,
        .next_phase = i % 4 == 0 ? workload::Phase::kPrefill : workload::Phase::kDecode,
        .decoding = i % 4 == 2,
        .prefill = {.latency = core::millis(80), .sms = 64},
        .decode = {.latency = core::millis(9), .sms = 48},
        .sms = 128 / tenants / 8 * 8,
        .last_change = 0};
    s.tenants.push_back(t);
  }
  return s;
}

template <typename Policy>
void decide(benchmark::State& state) {
  const auto s = snapshot(static_cast<int>(state.range(0)));
  const Policy policy;
  for (auto _ : state) benchmark::DoNotOptimize(policy.decide(s));
}
void BM_CoGpuDecide(benchmark::State& state) {
  decide<gpu::CoGpuPolicy>(state);
}
void BM_TpotFirstDecide(benchmark::State& state) {
  decide<gpu::TpotFirstPolicy>(state);
}
BENCHMARK(BM_CoGpuDecide)->Arg(2)->Arg(4)->Arg(8);
BENCHMARK(BM_TpotFirstDecide)->Arg(2)->Arg(4)->Arg(8);

// Timers in time order, run when the benchmark says.
class StepExecutor final : public device::Executor {
 public:
  core::Nanos now() const override { return now_; }
  device::TimerId schedule_at(core::Nanos when, std::function<void()> fn) override {
    const device::TimerId id = next_++;
    timers_.emplace(std::pair{std::max(when, now_), id}, std::move(fn));
    return id;
  }
  bool cancel(device::TimerId id) override {
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
      if (it->first.second == id) {
        timers_.erase(it);
        return true;
      }
    }
    return false;
  }
  void advance(core::Nanos by) {
    now_ += by;
    while (!timers_.empty() && timers_.begin()->first.first <= now_) {
      auto node = timers_.extract(timers_.begin());
      node.mapped()();
    }
  }

 private:
  core::Nanos now_ = 0;
  device::TimerId next_ = 1;
  std::map<std::pair<core::Nanos, device::TimerId>, std::function<void()>> timers_;
};

// Accepts launches and finishes them when told, oldest first; no timing model at all.
class RecordingDevice final : public device::GpuDevice {
 public:
  RecordingDevice(device::Executor& exec, hw::GpuSpec spec) : exec_(exec), spec_(std::move(spec)) {}
  const hw::GpuSpec& spec() const override { return spec_; }
  device::Capabilities capabilities() const override { return {.sm_partitions = true}; }
  device::Executor& executor() override { return exec_; }
  core::Result<device::DomainId> create_bandwidth_domain(double) override { return 1; }
  core::Result<device::StreamId> create_stream(const device::StreamConfig&) override {
    return streams_++;
  }
  core::Status configure_stream(device::StreamId, const device::StreamConfig&) override {
    return {};
  }
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr, std::uint64_t tag,
                      device::DoneCallback done) override {
    pending_.push_back({stream, tag, std::move(done), exec_.now()});
    return {};
  }
  core::Status suspend_context(device::ContextId) override { return {}; }
  core::Status resume_context(device::ContextId) override { return {}; }
  core::Status set_clock_mhz(double) override { return {}; }
  double clock_mhz() const override { return spec_.boost_clock_mhz; }
  void add_observer(device::DeviceObserver*) override {}
  device::DeviceStats stats() const override { return {}; }

  // Finishes the oldest launch; false if none is pending.
  bool finish_one() {
    if (pending_.empty()) return false;
    auto p = std::move(pending_.front());
    pending_.pop_front();
    p.done({.stream = p.stream,
            .tag = p.tag,
            .submitted = p.at,
            .started = p.at,
            .finished = exec_.now()});
    return true;
  }

 private:
  struct Pending {
    device::StreamId stream;
    std::uint64_t tag;
    device::DoneCallback done;
    core::Nanos at;
  };
  device::Executor& exec_;
  hw::GpuSpec spec_;
  device::StreamId streams_ = 0;
  std::deque<Pending> pending_;
};

workload::KernelSequencePtr steps(workload::Phase phase, int kernels) {
  workload::Kernel k;
  k.name = "k";
  k.blocks = 132;
  k.flops_per_block = 1e6;
  workload::KernelSequence seq;
  seq.groups.push_back({.kernels = {k}, .repeat = kernels});
  seq.phase = phase;
  return std::make_shared<const workload::KernelSequence>(std::move(seq));
}

void BM_CoGpuLaunch(benchmark::State& state) {
  StepExecutor exec;
  RecordingDevice dev(exec, *hw::find_gpu("h100"));
  gpu::CoGpuMode mode(gpu::CoGpuOptions{}, std::make_unique<gpu::CoGpuPolicy>());
  const std::vector<gpu::TenantInfo> ts = {
      {.id = 0, .name = "chat", .latency_critical = true, .tpot_slo = core::millis(50)},
      {.id = 1, .name = "train"}};
  if (!mode.attach(dev, ts)) {
    state.SkipWithError("attach failed");
    return;
  }
  const auto decode = steps(workload::Phase::kDecode, 1000);
  const auto train = steps(workload::Phase::kTraining, 1000);
  std::function<void(const device::SubmissionDone&)> more_decode, more_train;
  more_decode = [&](const device::SubmissionDone&) {
    (void)mode.submit(0, decode, 0, more_decode);
  };
  more_train = [&](const device::SubmissionDone&) { (void)mode.submit(1, train, 0, more_train); };
  (void)mode.submit(0, decode, 0, more_decode);
  (void)mode.submit(1, train, 0, more_train);
  exec.advance(core::millis(1));  // first remaps done
  for (auto _ : state) {
    exec.advance(core::micros(5));
    if (!dev.finish_one()) exec.advance(core::millis(1));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CoGpuLaunch);

}  // namespace

BENCHMARK_MAIN();
