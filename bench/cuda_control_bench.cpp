// The resident control kernel on a real GPU (src/tessera/backends/cuda/control_channel.hpp), in
// microseconds:
//   ./build/bench/tessera_cuda_control_bench
// Both benchmarks skip without a GPU (scripts/device-check.sh runs them on one).
//
// BM_ControlRoundTrip: post a command to the mailbox in mapped pinned memory and spin until the
//   control kernel acknowledges it (host -> GPU -> host over the PCIe/C2C link).
// BM_YieldLatency: a persistent tessera_emulate with 1000 checkpoints fills the GPU; the time
//   from request_yield to the completion of that launch (cuEventQuery on an event recorded after
//   it), i.e. how fast a best-effort kernel gets off the SMs. Counter "yielded": blocks that
//   stopped early (all of them when the request landed mid-run).

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "tessera/backends/cuda/control_channel.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/emulation.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using namespace tessera;

// The GPU, its primary context, two streams (control, work), the kernels and the persistent
// kernel's buffers, opened once for the program.
struct Gpu {
  std::unique_ptr<cuda::DriverLibrary> driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream control = nullptr;
  CUstream work = nullptr;
  CUevent done = nullptr;
  std::unique_ptr<cuda::KernelModule> module;
  int sms = 0;
  CUdeviceptr scratch = 0, sink = 0, progress = 0, yielded = 0;
  static constexpr std::uint64_t kScratchBytes = std::uint64_t{256} << 20;
  static constexpr int kBlocksPerSm = 4;  // 256 threads x 64 registers
};

core::Result<std::unique_ptr<Gpu>> open_gpu() {
  auto g = std::make_unique<Gpu>();
  TESSERA_ASSIGN_OR_RETURN(g->driver, cuda::DriverLibrary::open());
  TESSERA_ASSIGN_OR_RETURN(int count, g->driver->device_count());
  if (count == 0) return core::fail(core::Domain::kCuda, core::Code::kUnsupported, "no GPU");
  const cuda::DriverLibrary& d = *g->driver;
  const cuda::DriverApi& api = d.api();
  TESSERA_TRY(d.check(api.device_get(&g->device, 0), "cuDeviceGet"));
  TESSERA_TRY(d.check(api.primary_ctx_retain(&g->context, g->device), "cuDevicePrimaryCtxRetain"));
  TESSERA_TRY(d.check(api.ctx_set_current(g->context), "cuCtxSetCurrent"));
  TESSERA_TRY(d.check(
      api.device_get_attribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->device),
      "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"));
  TESSERA_TRY(d.check(api.stream_create(&g->control, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  TESSERA_TRY(d.check(api.stream_create(&g->work, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  TESSERA_TRY(d.check(api.event_create(&g->done, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  TESSERA_ASSIGN_OR_RETURN(
      g->module, cuda::KernelModule::load(d, cuda::tessera_kernels_image(), "tessera kernels"));
  TESSERA_TRY(cuda::allow_emulation_shared_memory(d, *g->module, g->device));
  // Allocated before any control kernel is resident: allocations and frees may wait for running
  // kernels (CUDA C++ Programming Guide, "Implicit Synchronization").
  const std::size_t blocks = static_cast<std::size_t>(g->sms) * Gpu::kBlocksPerSm;
  TESSERA_TRY(d.check(api.mem_alloc(&g->scratch, Gpu::kScratchBytes), "cuMemAlloc(scratch)"));
  TESSERA_TRY(d.check(api.mem_alloc(&g->sink, 4), "cuMemAlloc(sink)"));
  TESSERA_TRY(d.check(api.mem_alloc(&g->progress, 4 * blocks), "cuMemAlloc(progress)"));
  TESSERA_TRY(d.check(api.mem_alloc(&g->yielded, 4), "cuMemAlloc(yielded)"));
  TESSERA_TRY(d.check(api.memset_d8(g->sink, 0, 4), "cuMemsetD8"));
  return g;
}

// The program's GPU, or null with the reason in `why`.
Gpu* gpu(std::string* why) {
  static auto g = open_gpu();
  if (!g) {
    *why = "needs a GPU (" + g.error().message() + "); scripts/device-check.sh runs it on one";
    return nullptr;
  }
  return g->get();
}

void BM_ControlRoundTrip(benchmark::State& state) {
  std::string why;
  Gpu* g = gpu(&why);
  if (g == nullptr) {
    state.SkipWithError(why.c_str());
    return;
  }
  auto channel = cuda::ControlChannel::start(*g->driver, *g->module, g->control);
  if (!channel) {
    state.SkipWithError(channel.error().message().c_str());
    return;
  }
  bool raise = true;
  for (auto _ : state) {
    auto seq = raise ? (*channel)->request_yield(0) : (*channel)->clear(0);
    raise = !raise;
    if (!seq) {
      state.SkipWithError(seq.error().message().c_str());
      break;
    }
    if (auto st = (*channel)->wait_acknowledged(*seq, core::seconds(1)); !st) {
      state.SkipWithError(st.error().message().c_str());
      break;
    }
  }
}
BENCHMARK(BM_ControlRoundTrip)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_YieldLatency(benchmark::State& state) {
  std::string why;
  Gpu* g = gpu(&why);
  if (g == nullptr) {
    state.SkipWithError(why.c_str());
    return;
  }
  const cuda::DriverLibrary& d = *g->driver;
  const cuda::DriverApi& api = d.api();
  auto channel = cuda::ControlChannel::start(d, *g->module, g->control);
  if (!channel) {
    state.SkipWithError(channel.error().message().c_str());
    return;
  }
  cuda::ControlChannel& ch = **channel;
  workload::Kernel k;
  k.name = "persistent";
  k.blocks = static_cast<std::int64_t>(g->sms) * Gpu::kBlocksPerSm;
  k.block.threads = 256;
  k.block.registers_per_thread = 64;
  // ASSUMPTION: 4e6 FMAs per thread run about 20 ms on an H100/H200 at boost clock (1024
  // threads per SM, 128 FMA lanes), so a request 2 ms in lands mid-run; each of the 1001 chunks
  // is then about 20 us.
  k.flops_per_block = 2.0 * 256 * 4e6;
  k.bytes_per_block = 1 << 20;
  k.checkpoints = 1000;
  cuda::EmulationBuffers b;
  b.scratch = g->scratch;
  b.scratch_bytes = Gpu::kScratchBytes;
  b.sink = g->sink;
  b.yield_flag = ch.yield_flag(0);
  b.progress = g->progress;
  b.yielded_blocks = g->yielded;
  auto launch = cuda::emulation_launch(k, {0, k.blocks}, *hw::find_gpu("h100"), b);
  if (!launch) {
    state.SkipWithError(launch.error().message().c_str());
    return;
  }
  const auto fail = [&](const core::Status& st) {
    state.SkipWithError(st.error().message().c_str());
  };
  std::uint32_t yielded_total = 0;
  for (auto _ : state) {
    // Reset on the work stream (async: the legacy stream's copies would not order with it).
    auto seq = ch.clear(0);
    if (!seq) return fail(std::unexpected(seq.error()));
    if (auto st = ch.wait_acknowledged(*seq, core::seconds(1)); !st) return fail(st);
    if (auto st = d.check(api.stream_synchronize(g->work), "cuStreamSynchronize"); !st) {
      return fail(st);
    }
    const std::uint32_t zeros[1] = {0};
    if (auto st = d.check(api.memcpy_htod(g->yielded, zeros, 4), "cuMemcpyHtoD"); !st) {
      return fail(st);
    }
    if (auto st = d.check(api.memset_d8(g->progress, 0, 4 * static_cast<std::size_t>(k.blocks)),
                          "cuMemsetD8");
        !st) {
      return fail(st);
    }
    if (auto st = d.check(api.stream_synchronize(nullptr), "cuStreamSynchronize(legacy)"); !st) {
      return fail(st);
    }
    if (auto st = g->module->launch(TESSERA_KERNEL_EMULATE, launch->grid, launch->block,
                                    launch->shared_bytes, g->work, launch->params);
        !st) {
      return fail(st);
    }
    if (auto st = d.check(api.event_record(g->done, g->work), "cuEventRecord"); !st) {
      return fail(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));

    const auto t0 = std::chrono::steady_clock::now();
    auto y = ch.request_yield(0);
    if (!y) return fail(std::unexpected(y.error()));
    CUresult r = CUDA_ERROR_NOT_READY;
    while ((r = api.event_query(g->done)) == CUDA_ERROR_NOT_READY) {
    }
    const auto t1 = std::chrono::steady_clock::now();
    if (auto st = d.check(r, "cuEventQuery"); !st) return fail(st);
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    std::uint32_t yielded = 0;
    if (auto st = d.check(api.memcpy_dtoh(&yielded, g->yielded, 4), "cuMemcpyDtoH"); !st) {
      return fail(st);
    }
    yielded_total += yielded;
  }
  state.counters["yielded"] = benchmark::Counter(yielded_total, benchmark::Counter::kAvgIterations);
  state.counters["blocks"] = static_cast<double>(k.blocks);
}
BENCHMARK(BM_YieldLatency)->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
