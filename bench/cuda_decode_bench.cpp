// The compute models on a real GPU (src/tessera/backends/cuda/decode_step.hpp): how long one decode
// step takes (the determinism harness's latency-critical tenant, with its checksum kernels) for
// each GEMM variant, and how much work the training-like step (its best-effort load) does per
// second.
//   ./build/bench/tessera_cuda_decode_bench
// Skips (SkipWithError) without a driver, GPU or cuBLASLt; scripts/device-check.sh runs it on one.
//
// BM_DecodeStep/variant: variant 0 fixed, 1 drift; one step (embed, LM head, softmax, argmax and
//   their checksums) on a stream of the primary context, then finish_step (which waits for it).
//   Default shape (B 4, H 1024, V 32000).
// BM_TrainStep/n: one training step (GEMM n x n x n, reduce, update; no checksums), waited for;
//   the counter TFLOPs is the GEMM's 2n^3 per second of step.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "cuda_bench_gpu.hpp"
#include "tessera/backends/cuda/cublaslt_library.hpp"
#include "tessera/backends/cuda/decode_step.hpp"
#include "tessera/backends/cuda/driver_library.hpp"

namespace {

using namespace tessera;

// cuBLASLt and a stream in the primary context of the benchmarks' GPU, made once; null (with the
// reason) where either is missing.
struct Gpu {
  const cuda::DriverLibrary* driver = nullptr;
  std::unique_ptr<cuda::CublasLt> lt;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int sms = 0;
  std::string why;
};
const Gpu& gpu() {
  static const Gpu g = [] {
    Gpu out;
    const bench::BenchGpu& base = bench::bench_gpu();
    if (base.driver == nullptr) {
      out.why = base.why;
      return out;
    }
    auto lt = cuda::CublasLt::open();
    if (!lt) {
      out.why = lt.error().message();
      return out;
    }
    const auto& api = base.driver->api();
    CUcontext popped = nullptr;
    if (api.primary_ctx_retain(&out.context, base.device.handle) != CUDA_SUCCESS ||
        api.ctx_push_current(out.context) != CUDA_SUCCESS ||
        api.stream_create(&out.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        api.ctx_pop_current(&popped) != CUDA_SUCCESS) {
      out.why = "cannot make a stream in the primary context";
      return out;
    }
    out.sms = base.device.sms;
    out.driver = base.driver.get();
    out.lt = std::move(*lt);
    return out;
  }();
  return g;
}

bool skip_without_gpu(benchmark::State& state) {
  if (gpu().driver != nullptr) return false;
  state.SkipWithError(("needs a GPU: " + gpu().why).c_str());
  return true;
}

// One step of `model` on the benchmark stream; false (after SkipWithError) on an error.
bool step(benchmark::State& state, workload::ComputeModel& model) {
  const Gpu& g = gpu();
  g.driver->api().ctx_push_current(g.context);
  for (const auto& k : model.step_sequence()->groups.at(0).kernels) {
    if (auto st = model.run_kernel(k.name, {.partition_sms = g.sms, .stream = g.stream}); !st) {
      state.SkipWithError(st.error().message().c_str());
      return false;
    }
  }
  CUcontext popped = nullptr;
  g.driver->api().ctx_pop_current(&popped);
  if (auto out = model.finish_step(); !out) {
    state.SkipWithError(out.error().message().c_str());
    return false;
  }
  return true;
}

void BM_DecodeStep(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  cuda::DecodeModelOptions options;
  options.gemm.variant =
      state.range(0) == 0 ? cuda::GemmVariant::kFixed : cuda::GemmVariant::kDrift;
  auto model = cuda::CudaDecodeModel::create(*gpu().driver, *gpu().lt, options);
  if (!model) {
    state.SkipWithError(model.error().message().c_str());
    return;
  }
  if (!step(state, **model)) return;  // warm-up: first launches load the kernels
  for (auto _ : state) {
    if (!step(state, **model)) return;
  }
  state.SetLabel(std::string(cuda::to_string(options.gemm.variant)));
}
BENCHMARK(BM_DecodeStep)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TrainStep(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int n = static_cast<int>(state.range(0));
  cuda::TrainingModelOptions options;
  options.shape = {.m = n, .n = n, .k = n};
  auto model = cuda::CudaTrainingModel::create(*gpu().driver, *gpu().lt, options);
  if (!model) {
    state.SkipWithError(model.error().message().c_str());
    return;
  }
  if (!step(state, **model)) return;
  for (auto _ : state) {
    if (!step(state, **model)) return;
  }
  state.counters["TFLOPs"] =
      benchmark::Counter(2.0 * n * n * n * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TrainStep)->Arg(2048)->Arg(4096)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
