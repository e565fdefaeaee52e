// Cost of the learned models a scheduler consults per kernel launch: KernelProfiles::predict and
// record (right-sizing, atom sizing), DvfsGovernor::choose_clock_mhz and observe, and the
// determinism checker's work per completed launch. Kernels are the real ones of a Llama-3-8B
// decode step and a ResNet-50 training iteration, on an H100.

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/policy/dvfs_governor.hpp"
#include "tessera/gpu/policy/kernel_profiles.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace {

using namespace tessera;

struct Fixture {
  hw::GpuSpec spec;
  std::vector<workload::KernelSequencePtr> sequences;
  std::vector<workload::Kernel> kernels;  // distinct kernels of all sequences
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture out;
    out.spec = *hw::find_gpu("h100");
    const auto model = *workload::find_model("llama-3-8b");
    const std::vector<int> contexts(16, 1024);
    out.sequences.push_back(
        std::make_shared<const workload::KernelSequence>(workload::decode_step(model, contexts)));
    out.sequences.push_back(
        std::make_shared<const workload::KernelSequence>(workload::resnet50_iteration(32)));
    for (const auto& s : out.sequences) {
      for (const auto& g : s->groups) {
        for (const auto& k : g.kernels) out.kernels.push_back(k);
      }
    }
    return out;
  }();
  return f;
}

// Profiles of every kernel seen at 4 TPC counts, as after a warm-up.
gpu::KernelProfiles warm_profiles(const Fixture& f) {
  gpu::KernelProfiles p;
  for (const auto& k : f.kernels) {
    for (int t : {f.spec.tpcs / 8, f.spec.tpcs / 4, f.spec.tpcs / 2, f.spec.tpcs}) {
      p.record(f.spec, k, k.blocks, t, f.spec.boost_clock_mhz, 1000 + 100000 / t);
    }
  }
  return p;
}

void BM_KernelProfilesPredict(benchmark::State& state) {
  const auto& f = fixture();
  const auto profiles = warm_profiles(f);
  std::size_t i = 0;
  int t = 1;
  for (auto _ : state) {
    const auto& k = f.kernels[i];
    benchmark::DoNotOptimize(profiles.predict(f.spec, k, k.blocks / 2 + 1, t));
    i = (i + 1) % f.kernels.size();
    t = t % f.spec.tpcs + 1;
  }
  state.counters["kernels"] = static_cast<double>(profiles.kernels());
}
BENCHMARK(BM_KernelProfilesPredict);

void BM_KernelProfilesRecord(benchmark::State& state) {
  const auto& f = fixture();
  auto profiles = warm_profiles(f);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& k = f.kernels[i];
    profiles.record(f.spec, k, k.blocks, f.spec.tpcs / 2, f.spec.boost_clock_mhz, 5000);
    i = (i + 1) % f.kernels.size();
  }
}
BENCHMARK(BM_KernelProfilesRecord);

void BM_RightSize(benchmark::State& state) {
  const gpu::ScalingFit fit{.m_ns = 100000, .b_ns = 2000};
  const int tpcs = fixture().spec.tpcs;
  for (auto _ : state) benchmark::DoNotOptimize(gpu::right_size(fit, tpcs, 0.04));
}
BENCHMARK(BM_RightSize);

// The governor of a stream that has seen state.range(0) distinct kernels, each at two clocks.
void BM_DvfsChooseClock(benchmark::State& state) {
  const auto& f = fixture();
  gpu::DvfsGovernor g(gpu::candidate_clocks(f.spec), 0.1);
  const auto n = static_cast<std::size_t>(state.range(0));
  for (std::size_t i = 0; i < n; ++i) {
    auto key = gpu::key_of(f.kernels[i % f.kernels.size()]);
    key.blocks += static_cast<std::int64_t>(i / f.kernels.size());  // distinct past the list
    g.observe(key, f.spec.boost_clock_mhz, 1000);
    g.observe(key, 1200, 1000 + static_cast<core::Nanos>(i % 500));
  }
  for (auto _ : state) benchmark::DoNotOptimize(g.choose_clock_mhz());
}
BENCHMARK(BM_DvfsChooseClock)->Arg(16)->Arg(64)->Arg(256);

void BM_DvfsObserve(benchmark::State& state) {
  const auto& f = fixture();
  gpu::DvfsGovernor g(gpu::candidate_clocks(f.spec), 0.1);
  std::vector<gpu::KernelKey> keys;
  for (const auto& k : f.kernels) keys.push_back(gpu::key_of(k));
  std::size_t i = 0;
  for (auto _ : state) {
    g.observe(keys[i], (i & 1) ? f.spec.boost_clock_mhz : 1200, 1000);
    i = (i + 1) % keys.size();
  }
}
BENCHMARK(BM_DvfsObserve);

// The checker's cost per completed launch: a decode step's kernels, each reported whole.
void BM_DeterminismCheckerPerLaunch(benchmark::State& state) {
  const auto& seq = fixture().sequences[0];
  std::vector<const workload::Kernel*> order;
  for (const auto& g : seq->groups) {
    for (int r = 0; r < g.repeat; ++r) {
      for (const auto& k : g.kernels) order.push_back(&k);
    }
  }
  gpu::DeterminismChecker checker;
  std::size_t i = 0;
  core::Nanos now = 0;
  checker.on_submit(1, seq);
  for (auto _ : state) {
    const workload::Kernel* k = order[i];
    checker.on_kernel_complete({.stream = 0,
                                .context = 1,
                                .bandwidth_domain = 0,
                                .kernel = k,
                                .submission_tag = 0,
                                .start = now,
                                .end = now + 10,
                                .sms = 1,
                                .blocks = {.begin = 0, .end = k->blocks}});
    now += 10;
    if (++i == order.size()) {
      i = 0;
      state.PauseTiming();
      checker.on_submit(1, seq);
      state.ResumeTiming();
    }
  }
  if (checker.violation()) state.SkipWithError(checker.violation()->message().c_str());
}
BENCHMARK(BM_DeterminismCheckerPerLaunch);

}  // namespace

BENCHMARK_MAIN();
