#pragma once
// The GPU and kernel shape shared by the atomizer and TPC scheduler tests: the synthetic TestGpu
// with 16 SMs in 8 TPCs of 2 SMs, and kernels of 256 threads x 64 registers, which fit 4 blocks
// per SM (65536 registers), so a wave on t TPCs is 8t blocks.

#include <cstdint>

#include "support/test_gpu.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::test {

inline const hw::GpuSpec& tpc_gpu() {
  static const hw::GpuSpec s = TestGpu().sms(16).build();
  return s;
}

// `blocks` blocks of 1000 FLOPs each; `independent` says whether the grid may be split.
inline workload::Kernel tpc_kernel(std::int64_t blocks, bool independent = true) {
  workload::Kernel k;
  k.name = "k";
  k.blocks = blocks;
  k.block = {.threads = 256, .registers_per_thread = 64, .shared_memory_bytes = 0};
  k.flops_per_block = 1000;
  k.block_independent = independent;
  return k;
}

}  // namespace tessera::test
