#include "tessera/workload/kernels/persistent.hpp"

#include <algorithm>

namespace tessera::workload {

Kernel make_persistent(const Kernel& kernel, std::int64_t resident_blocks, int max_checkpoints) {
  if (resident_blocks < 1 || kernel.blocks <= resident_blocks || kernel.checkpoints > 0) {
    return kernel;
  }
  const std::int64_t tiles = kernel.blocks;
  const std::int64_t grid = resident_blocks;
  Kernel p = kernel;
  p.blocks = grid;
  // Each block's equal share of the tiles (stream-K), so the grid does what the tiles did.
  p.flops_per_block = kernel.total_flops() / static_cast<double>(grid);
  p.bytes_per_block = kernel.total_bytes() / static_cast<double>(grid);
  p.block_independent = kernel.block_independent && tiles % grid == 0;
  // A share of n tiles, n rounded up, has n - 1 boundaries between tiles to poll at.
  const std::int64_t between = (tiles + grid - 1) / grid - 1;
  p.checkpoints =
      static_cast<int>(std::clamp<std::int64_t>(between, 0, std::max(max_checkpoints, 0)));
  return p;
}

KernelSequence persistent_gemms(const KernelSequence& sequence, const Residency& residency,
                                int max_checkpoints) {
  KernelSequence out = sequence;
  for (auto& group : out.groups) {
    for (auto& k : group.kernels) {
      if (k.kind != KernelClass::kGemm && k.kind != KernelClass::kConv) continue;
      k = make_persistent(k, residency(k.block), max_checkpoints);
    }
  }
  return out;
}

}  // namespace tessera::workload
