// CudaGpu's virtual-context path on a real GPU (src/tessera/backends/cuda/cuda_gpu.hpp):
//   ./build/bench/tessera_cuda_gpu_bench
// Every benchmark skips without a GPU (scripts/device-check.sh runs them on one).
//
// BM_RawLaunch: kBatch launches of a 1-block tessera_emulate with cuLaunchKernel on one stream,
//   then cuStreamSynchronize: the floor.
// BM_CudaGpuLaunch: the same kernels submitted through CudaGpu (one submission of kBatch kernels
//   on one stream in one green context), driven to completion with run_until: events around every
//   kernel, the issue window, polling and delivery. Counter s_per_kernel on every one
//   (printed with an SI prefix: 11.7u is 11.7 us): the difference is the virtual-context path's
//   overhead per launch.
// BM_CudaGpuRemap/0 and /1: kBatch single-kernel submissions, every one issued at once (issue
//   window kBatch); /1 moves the stream to the other of two disjoint partitions before every
//   kernel (a cuStreamWaitEvent and another green context's CUstream each time), /0 never.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "tessera/backends/cuda/cuda_gpu.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/emulation.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/core/try.hpp"
#include "tessera/device/wall_clock_executor.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace {

using namespace tessera;

constexpr int kBatch = 256;

workload::Kernel tiny_kernel() {
  workload::Kernel k;
  k.name = "tiny";
  k.blocks = 1;
  k.block.threads = 32;
  k.block.registers_per_thread = 32;
  k.flops_per_block = 2.0 * 32;  // one FMA per thread
  k.bytes_per_block = 0;
  return k;
}

// The driver, a CudaGpu, and what the raw path needs, opened once for the program.
struct Gpu {
  std::unique_ptr<cuda::DriverLibrary> driver;
  device::WallClockExecutor executor;
  std::unique_ptr<cuda::CudaGpu> gpu;
  std::unique_ptr<cuda::KernelModule> module;
  CUstream raw_stream = nullptr;
  CUdeviceptr sink = 0;
};

core::Result<std::unique_ptr<Gpu>> open_gpu() {
  auto g = std::make_unique<Gpu>();
  TESSERA_ASSIGN_OR_RETURN(g->driver, cuda::DriverLibrary::open());
  TESSERA_ASSIGN_OR_RETURN(const int count, g->driver->device_count());
  if (count == 0) return core::fail(core::Domain::kCuda, core::Code::kUnsupported, "no GPU");
  const cuda::DriverLibrary& d = *g->driver;
  // The raw path's stream, buffer and module come first, in the primary context CudaGpu will
  // use too: once CudaGpu's control kernel is resident, allocations may wait for running kernels
  // (CUDA C++ Programming Guide, "Implicit Synchronization").
  TESSERA_ASSIGN_OR_RETURN(const auto device, d.device(0));
  CUcontext primary = nullptr;
  TESSERA_TRY(d.check(d.api().primary_ctx_retain(&primary, device.handle),
                      "cuDevicePrimaryCtxRetain"));  // held for the program's life
  TESSERA_TRY(d.check(d.api().ctx_set_current(primary), "cuCtxSetCurrent"));
  TESSERA_TRY(
      d.check(d.api().stream_create(&g->raw_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  TESSERA_TRY(d.check(d.api().mem_alloc(&g->sink, 4), "cuMemAlloc(sink)"));
  TESSERA_TRY(d.check(d.api().memset_d8(g->sink, 0, 4), "cuMemsetD8(sink)"));
  TESSERA_ASSIGN_OR_RETURN(g->module, cuda::KernelModule::load(d, cuda::tessera_kernels_image(),
                                                               "tessera kernels (raw path)"));
  cuda::CudaGpuOptions options;
  options.issue_window = kBatch;
  options.scratch_bytes = std::int64_t{64} << 20;  // the tiny kernel moves no bytes
  TESSERA_ASSIGN_OR_RETURN(g->gpu, cuda::CudaGpu::create(d, g->executor, options));
  return g;
}

Gpu* gpu(benchmark::State& state) {
  static auto g = open_gpu();
  if (!g) {
    state.SkipWithError(
        ("needs a GPU (" + g.error().message() + "); scripts/device-check.sh runs it on one")
            .c_str());
    return nullptr;
  }
  return g->get();
}

void BM_RawLaunch(benchmark::State& state) {
  Gpu* g = gpu(state);
  if (g == nullptr) return;
  const auto k = tiny_kernel();
  const cuda::EmulationBuffers buffers{.sink = g->sink};
  auto launch = cuda::emulation_launch(k, {.begin = 0, .end = 1}, g->gpu->spec(), buffers);
  if (!launch) {
    state.SkipWithError(launch.error().message().c_str());
    return;
  }
  const cuda::DriverLibrary& d = *g->driver;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      auto st = g->module->launch(TESSERA_KERNEL_EMULATE, launch->grid, launch->block,
                                  launch->shared_bytes, g->raw_stream, launch->params);
      if (!st) {
        state.SkipWithError(st.error().message().c_str());
        return;
      }
    }
    if (auto st = d.check(d.api().stream_synchronize(g->raw_stream), "cuStreamSynchronize"); !st) {
      state.SkipWithError(st.error().message().c_str());
      return;
    }
  }
  state.counters["s_per_kernel"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RawLaunch)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaGpuLaunch(benchmark::State& state) {
  Gpu* g = gpu(state);
  if (g == nullptr) return;
  auto stream = g->gpu->create_stream(
      device::StreamConfig{.context = 1, .sms = device::SmMask::range(0, 16)});
  if (!stream) {
    state.SkipWithError(stream.error().message().c_str());
    return;
  }
  workload::KernelSequence seq;
  seq.groups.push_back({.kernels = {tiny_kernel()}, .repeat = kBatch});
  const auto sequence = std::make_shared<const workload::KernelSequence>(seq);
  for (auto _ : state) {
    auto st = g->gpu->submit(*stream, sequence, 0, nullptr);
    if (st) st = g->gpu->run_until(core::kNever);
    if (!st) {
      state.SkipWithError(st.error().message().c_str());
      return;
    }
  }
  state.counters["s_per_kernel"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CudaGpuLaunch)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CudaGpuRemap(benchmark::State& state) {
  Gpu* g = gpu(state);
  if (g == nullptr) return;
  const bool remap = state.range(0) != 0;
  const device::StreamConfig a{.context = 1, .sms = device::SmMask::range(0, 16)};
  const device::StreamConfig b{.context = 1, .sms = device::SmMask::range(64, 80)};
  auto stream = g->gpu->create_stream(a);
  if (!stream) {
    state.SkipWithError(stream.error().message().c_str());
    return;
  }
  const auto one = workload::single_kernel(tiny_kernel());
  for (auto _ : state) {
    core::Status st;
    for (int i = 0; i < kBatch && st; ++i) {
      if (remap) st = g->gpu->configure_stream(*stream, i % 2 == 0 ? a : b);
      if (st) st = g->gpu->submit(*stream, one, static_cast<std::uint64_t>(i), nullptr);
    }
    if (st) st = g->gpu->run_until(core::kNever);
    if (!st) {
      state.SkipWithError(st.error().message().c_str());
      return;
    }
  }
  state.counters["s_per_kernel"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBatch,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CudaGpuRemap)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
