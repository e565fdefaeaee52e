#include "tessera/workload/kernels/memory_bound.hpp"

#include <algorithm>

namespace tessera::workload {

namespace {
constexpr int kWarp = 32;                  // CUDA warp size (CUDA C++ Programming Guide)
constexpr int kMaxThreadsPerBlock = 1024;  // CUDA limit on every catalog GPU (same guide)
}  // namespace

Kernel memory_bound(const MemoryBoundDesc& d) {
  const std::int64_t blocks = std::max<std::int64_t>(d.blocks, 1);
  return Kernel{
      .name = d.name,
      .kind = d.kind,
      .pipe = ComputePipe::kFp32,
      .blocks = blocks,
      .block = BlockResources{.threads = d.threads,
                              .registers_per_thread = kMemoryBoundRegisters,
                              .shared_memory_bytes = d.shared_memory_bytes},
      .flops_per_block = d.flops / static_cast<double>(blocks),
      .bytes_per_block = d.bytes / static_cast<double>(blocks),
      .block_independent = d.block_independent,
  };
}

std::int64_t elementwise_blocks(std::int64_t elements) {
  return std::max<std::int64_t>(1, (elements + kElementsPerBlock - 1) / kElementsPerBlock);
}

int row_threads(std::int64_t width) {
  const std::int64_t warps = (std::max<std::int64_t>(width, 1) + kWarp - 1) / kWarp;
  return static_cast<int>(std::min<std::int64_t>(warps * kWarp, kMaxThreadsPerBlock));
}

}  // namespace tessera::workload
