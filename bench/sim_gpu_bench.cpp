// Simulated-GPU throughput: kernels simulated per wall-clock second, and how many times faster
// than real time the simulation runs (sim_x_realtime), for an LLM decode stream (Llama-3-8B,
// batch 8, steps back to back; kernels_per_step says how many) on a simulated H100:
//   alone       the decode stream by itself on every SM
//   shared      decode plus a ResNet-50 training stream, both on every SM in one bandwidth
//               domain (MPS-like: per-kernel path, kernels contend for SMs and bandwidth)
//   partitioned decode on half the SMs with half the bandwidth, training on the other half
// Each runs with exact batching (the default) and without it (the per-kernel reference path).
//   ./build/bench/tessera_sim_gpu_bench

#include <benchmark/benchmark.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace {

using namespace tessera;

enum Mode : int { kAlone = 0, kShared = 1, kPartitioned = 2 };

constexpr core::Nanos kSimulated = 2 * core::kNanosPerSecond;  // per benchmark iteration

struct Workloads {
  workload::KernelSequencePtr decode;
  workload::KernelSequencePtr train;
};

const Workloads& workloads() {
  static const Workloads w = [] {
    const auto model = workload::find_model("llama-3-8b");
    const std::array<int, 8> contexts{900, 1100, 700, 1500, 400, 1300, 1000, 800};
    return Workloads{
        .decode =
            std::make_shared<workload::KernelSequence>(workload::decode_step(*model, contexts)),
        .train = std::make_shared<workload::KernelSequence>(workload::resnet50_iteration(64)),
    };
  }();
  return w;
}

// Submits `seq` on `stream` again each time it finishes, until the horizon.
struct Loop {
  sim::SimGpu* gpu;
  device::StreamId stream;
  workload::KernelSequencePtr seq;
  core::Nanos horizon;
  void submit() {
    (void)gpu->submit(stream, seq, 0, [this](const device::SubmissionDone& d) {
      if (d.finished < horizon) submit();
    });
  }
};

void BM_SimGpu(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  sim::SimGpuOptions options;
  options.batch_isolated_kernels = state.range(1) != 0;
  const auto spec = hw::find_gpu("H100-SXM5-80GB");
  if (!spec) {
    state.SkipWithError(spec.error().message().c_str());
    return;
  }
  const Workloads& w = workloads();
  std::int64_t kernels = 0;
  double simulated_seconds = 0;
  for (auto _ : state) {
    sim::Engine engine;
    sim::SimGpu gpu(engine, *spec, options);
    const int half = spec->sms / 2;
    device::StreamConfig infer{
        .context = 1, .sms = {}, .max_sms = 0, .bandwidth_domain = 0, .priority = 0};
    device::StreamConfig train{
        .context = 2, .sms = {}, .max_sms = 0, .bandwidth_domain = 0, .priority = 0};
    if (mode == kPartitioned) {
      infer.sms = device::SmMask::range(0, half);
      infer.bandwidth_domain = *gpu.create_bandwidth_domain(0.5);
      train.sms = device::SmMask::range(half, spec->sms);
      train.bandwidth_domain = *gpu.create_bandwidth_domain(0.5);
    }
    std::vector<Loop> loops;
    loops.reserve(2);
    loops.push_back(Loop{&gpu, *gpu.create_stream(infer), w.decode, kSimulated});
    if (mode != kAlone) loops.push_back(Loop{&gpu, *gpu.create_stream(train), w.train, kSimulated});
    for (auto& l : loops) l.submit();
    engine.run_until(core::kNever);
    const auto stats = gpu.stats();
    kernels += stats.kernels_completed;
    simulated_seconds += core::to_seconds(stats.elapsed);
  }
  state.SetItemsProcessed(kernels);
  state.counters["sim_x_realtime"] =
      benchmark::Counter(simulated_seconds, benchmark::Counter::kIsRate);
  state.counters["kernels_per_step"] = static_cast<double>(w.decode->kernel_count());
}
BENCHMARK(BM_SimGpu)
    ->ArgNames({"mode", "batching"})
    ->ArgsProduct({{kAlone, kShared, kPartitioned}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
