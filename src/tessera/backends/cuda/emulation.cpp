#include "tessera/backends/cuda/emulation.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>

#include "tessera/core/try.hpp"
#include "tessera/device/occupancy.hpp"

namespace tessera::cuda {

namespace {

using core::Code;
using core::Domain;

// One FMA is a multiply and an add; one 16x16x16 MMA is 16*16*16 of them, issued by a whole warp.
constexpr double kFlopsPerFma = 2.0;
constexpr double kFlopsPerMma = 2.0 * 16 * 16 * 16;
constexpr int kWarpThreads = 32;
// A read vector and its write twin (kernel_params.h: 16-byte accesses, half read, half written).
constexpr double kBytesPerVectorPair = 32.0;
// cuLaunchKernel's gridDim.x limit on compute capability 3.0 and later (CUDA C++ Programming
// Guide, "Features and Technical Specifications").
constexpr std::int64_t kMaxGridX = (std::int64_t{1} << 31) - 1;

// Rounds a non-negative count to the nearest integer (halves up); nullopt above 2^32 - 1.
std::optional<std::uint32_t> round_count(double x) {
  const double r = std::floor(x + 0.5);
  if (!(r <= static_cast<double>(std::numeric_limits<std::uint32_t>::max()))) return std::nullopt;
  return static_cast<std::uint32_t>(r);
}

}  // namespace

std::int64_t emulation_shared_bytes(const hw::SmLimits& sm, int threads, std::int64_t shared_bytes,
                                    int target_blocks_per_sm) {
  const std::int64_t target = std::max(target_blocks_per_sm, 1);
  const std::int64_t by_shape =
      std::min<std::int64_t>(sm.max_blocks, threads > 0 ? sm.max_threads / threads : 0);
  const auto resident = [&](std::int64_t s) {
    return std::min(by_shape, sm.shared_memory_bytes / (s + kReservedSharedBytesPerBlock));
  };
  if (resident(shared_bytes) <= target) return shared_bytes;
  // Least s with floor(S / (s + R)) <= target, i.e. s + R > S / (target + 1).
  const std::int64_t raised =
      sm.shared_memory_bytes / (target + 1) + 1 - kReservedSharedBytesPerBlock;
  return std::max(shared_bytes, raised);
}

core::Result<EmulationLaunch> emulation_launch(const workload::Kernel& kernel,
                                               device::BlockRange range, const hw::GpuSpec& spec,
                                               const EmulationBuffers& buffers) {
  const auto bad = [&](std::string what) {
    return core::failf(Domain::kCuda, Code::kInvalidArgument,
                       "kernel '{}' cannot run as tessera_emulate on {}: {}", kernel.name,
                       spec.name, what);
  };
  const hw::SmLimits& sm = spec.sm;
  const int threads = kernel.block.threads;
  if (threads < 1 || threads > sm.max_threads_per_block) {
    return bad(fmt::format("{} threads per block; a block has 1 to {} threads", threads,
                           sm.max_threads_per_block));
  }
  const std::int64_t own_shared = kernel.block.shared_memory_bytes;
  if (own_shared < 0 || own_shared > sm.max_shared_memory_per_block_bytes) {
    return bad(fmt::format("{} bytes of shared memory per block; the GPU allows 0 to {} per block",
                           own_shared, sm.max_shared_memory_per_block_bytes));
  }
  if (kernel.blocks < 1) return bad(fmt::format("a grid of {} blocks", kernel.blocks));
  if (range.begin < 0 || range.end > kernel.blocks || range.size() < 1) {
    return bad(fmt::format("block range [{}, {}) is empty or outside the grid [0, {})", range.begin,
                           range.end, kernel.blocks));
  }
  if (range.size() > kMaxGridX) {
    return bad(fmt::format("block range of {} blocks is above the launch limit of {}; split it",
                           range.size(), kMaxGridX));
  }
  const int occupancy = device::blocks_per_sm(sm, kernel.block);
  if (occupancy < 1) {
    return bad(
        fmt::format("its blocks ({} threads, {} registers per thread, {} bytes of shared "
                    "memory) fit no SM",
                    threads, kernel.block.registers_per_thread, own_shared));
  }
  if (!(std::isfinite(kernel.flops_per_block) && kernel.flops_per_block >= 0) ||
      !(std::isfinite(kernel.bytes_per_block) && kernel.bytes_per_block >= 0)) {
    return bad(fmt::format("{} FLOPs and {} bytes per block; both must be finite and >= 0",
                           kernel.flops_per_block, kernel.bytes_per_block));
  }

  TesseraEmulateParams p{};
  // The emulation issues FP16 MMAs for every tensor pipe: it reproduces the work, not the format.
  if (kernel.pipe != workload::ComputePipe::kFp32) {
    const int full_warps = threads / kWarpThreads;
    if (full_warps == 0 && kernel.flops_per_block > 0) {
      return bad(
          fmt::format("tensor-core work in blocks of {} threads; warp-wide MMAs need at "
                      "least {} threads",
                      threads, kWarpThreads));
    }
    const auto mmas = full_warps == 0
                          ? std::optional<std::uint32_t>(0)
                          : round_count(kernel.flops_per_block / (kFlopsPerMma * full_warps));
    if (!mmas) {
      return bad(fmt::format("{} FLOPs per block is above 2^32 - 1 MMAs per warp",
                             kernel.flops_per_block));
    }
    p.fma_per_thread = *mmas;
    p.pipe = TESSERA_PIPE_TENSOR_FP16;
  } else {
    const auto fmas = round_count(kernel.flops_per_block / (kFlopsPerFma * threads));
    if (!fmas) {
      return bad(fmt::format("{} FLOPs per block is above 2^32 - 1 FMAs per thread",
                             kernel.flops_per_block));
    }
    p.fma_per_thread = *fmas;
    p.pipe = TESSERA_PIPE_FP32;
  }
  // The kernel splits its read vectors into chunks in 32-bit arithmetic.
  const double pairs = std::floor(kernel.bytes_per_block / kBytesPerVectorPair + 0.5);
  if (!(pairs < 0x1p32)) {
    return bad(fmt::format("{} bytes per block is above the {} a block can move; split the block",
                           kernel.bytes_per_block, (std::uint64_t{1} << 37) - 32));
  }
  p.bytes_per_block = static_cast<std::uint64_t>(pairs) * 32;
  if (kernel.checkpoints < 0) {
    return bad(fmt::format("{} checkpoints; the count cannot be negative", kernel.checkpoints));
  }
  p.checkpoints = static_cast<std::uint32_t>(kernel.checkpoints);

  if (buffers.sink == 0) return bad("no sink buffer; pass a device uint32");
  // The kernel wraps offsets with a mask (a remainder would cost it registers, hence residency).
  if (p.bytes_per_block > 0 && (buffers.scratch == 0 || buffers.scratch_bytes < 16 ||
                                !std::has_single_bit(buffers.scratch_bytes))) {
    return bad(
        fmt::format("it moves {} bytes per block but the scratch buffer is {} bytes at {:#x}; "
                    "pass a buffer whose size is a power of two, at least 16",
                    p.bytes_per_block, buffers.scratch_bytes, buffers.scratch));
  }
  if (p.checkpoints > 0 && buffers.progress == 0) {
    return bad(fmt::format("it has {} checkpoints but no progress buffer; pass uint32[{}]",
                           p.checkpoints, kernel.blocks));
  }
  p.block_offset = static_cast<std::uint64_t>(range.begin);
  p.virtual_blocks = static_cast<std::uint64_t>(kernel.blocks);
  p.scratch = buffers.scratch;
  p.scratch_bytes = buffers.scratch_bytes;
  p.sink = buffers.sink;
  p.yield_flag = buffers.yield_flag;
  p.progress = p.checkpoints > 0 ? buffers.progress : 0;
  p.yielded_blocks = buffers.yielded_blocks;

  EmulationLaunch launch;
  launch.params = p;
  launch.grid = static_cast<unsigned>(range.size());
  launch.block = static_cast<unsigned>(threads);
  launch.shared_bytes =
      static_cast<unsigned>(emulation_shared_bytes(sm, threads, own_shared, occupancy));
  launch.blocks_per_sm = occupancy;
  return launch;
}

core::Status allow_emulation_shared_memory(const DriverLibrary& driver, KernelModule& kernels,
                                           CUdevice device) {
  TESSERA_ASSIGN_OR_RETURN(CUkernel k, kernels.kernel(TESSERA_KERNEL_EMULATE));
  const DriverApi& api = driver.api();
  int optin = 0;
  TESSERA_TRY(
      driver.check(api.device_get_attribute(
                       &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device),
                   "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)"));
  int static_shared = 0;
  TESSERA_TRY(driver.check(
      api.kernel_get_attribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k, device),
      "cuKernelGetAttribute(tessera_emulate, SHARED_SIZE_BYTES)"));
  TESSERA_TRY(driver.check(api.kernel_set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    std::max(optin - static_shared, 0), k, device),
                           "cuKernelSetAttribute(tessera_emulate, MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
  return driver.check(api.kernel_set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                               CU_SHAREDMEM_CARVEOUT_MAX_SHARED, k, device),
                      "cuKernelSetAttribute(tessera_emulate, PREFERRED_SHARED_MEMORY_CARVEOUT)");
}

}  // namespace tessera::cuda
