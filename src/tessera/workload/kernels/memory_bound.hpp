#pragma once
// Builders for memory-bound kernels (norms, activations, residual adds, gathers, optimizer
// updates): FP32 pipe, launched either one block per row or one block per 1024 elements.

#include <cstdint>
#include <string_view>

#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

// Assumption: 256 threads each handling 4 elements, close to PyTorch's vectorised elementwise
// launch; registers are the small count such kernels compile to.
inline constexpr std::int64_t kElementsPerBlock = 1024;
inline constexpr int kElementwiseThreads = 256;
inline constexpr int kMemoryBoundRegisters = 32;

struct MemoryBoundDesc {
  std::string_view name;  // a string literal
  KernelClass kind = KernelClass::kElementwise;
  std::int64_t blocks = 1;
  int threads = kElementwiseThreads;
  double flops = 0;  // whole kernel
  double bytes = 0;  // whole kernel, DRAM reads + writes
  std::int64_t shared_memory_bytes = 0;
  bool block_independent = true;
};

Kernel memory_bound(const MemoryBoundDesc& d);

// Blocks for an elementwise pass over `elements` values (at least one block).
std::int64_t elementwise_blocks(std::int64_t elements);

// Threads for a one-block-per-row kernel over rows of `width` values: one thread per value up
// to 1024 (the per-block limit), rounded up to a whole warp.
int row_threads(std::int64_t width);

}  // namespace tessera::workload
