// Cost of green contexts on a real GPU (notes section 7, item 4): how long making and destroying
// one takes, which bounds how often CudaGpu can afford to create a context for a new granule set.
//   ./build/bench/tessera_cuda_green_context_bench
// Skips (SkipWithError) without a driver or GPU; scripts/device-check.sh runs it on one.
//
// BM_GreenContextCreateDestroy/sms: make_green_context over sms/8 granules of a split by 8 made
//   once outside the loop (descriptor, cuGreenCtxCreate, cuCtxFromGreenCtx, read-back, one
//   stream), then destroy_green_context.
// BM_PartitionSetCreateDestroy: GreenPartitionSet::create for {16, 32, 64} (the split chain: three
//   splits, five green contexts, three streams), then its destruction.

#include <benchmark/benchmark.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_bench_gpu.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/green_partitions.hpp"

namespace {

using namespace tessera;

using bench::skip_without_gpu;

void BM_GreenContextCreateDestroy(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const cuda::DriverLibrary& driver = *bench::bench_gpu().driver;
  const CUdevice device = bench::bench_gpu().device.handle;
  // ASSUMPTION: granules of 8 SMs, the minimum partition of CC 9.0 (cuda.h); on a device with a
  // larger minimum the split rounds up and the label shows the real count.
  auto granules = cuda::split_into_granules(driver, device, 8);
  if (!granules) {
    state.SkipWithError(granules.error().message().c_str());
    return;
  }
  const int wanted = static_cast<int>(state.range(0)) / granules->granule_sms;
  if (wanted < 1 || wanted > static_cast<int>(granules->groups.size())) {
    state.SkipWithError("the device has too few granules for this size");
    return;
  }
  std::vector<int> indices(static_cast<size_t>(wanted));
  std::iota(indices.begin(), indices.end(), 0);
  int sms = 0;
  for (auto _ : state) {
    auto ctx = cuda::make_green_context(driver, device, *granules, indices, 1);
    if (!ctx) {
      state.SkipWithError(ctx.error().message().c_str());
      return;
    }
    sms = ctx->sms;
    cuda::destroy_green_context(*ctx);
  }
  state.SetLabel(std::to_string(sms) + " SMs");
}
BENCHMARK(BM_GreenContextCreateDestroy)
    ->Arg(8)
    ->Arg(16)
    ->Arg(64)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.2);

void BM_PartitionSetCreateDestroy(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const cuda::DriverLibrary& driver = *bench::bench_gpu().driver;
  const CUdevice device = bench::bench_gpu().device.handle;
  const std::vector<int> sizes = {16, 32, 64};
  for (auto _ : state) {
    auto set = cuda::GreenPartitionSet::create(driver, device, sizes);
    if (!set) {
      state.SkipWithError(set.error().message().c_str());
      return;
    }
    set->reset();
  }
}
BENCHMARK(BM_PartitionSetCreateDestroy)->Unit(benchmark::kMicrosecond)->MinTime(0.2);

}  // namespace

BENCHMARK_MAIN();
