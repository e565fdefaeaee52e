#pragma once
// Persistent variants of GEMM-like kernels, so schedulers that preempt at checkpoints (CoGPU's
// resident control kernel) have something to preempt.
//
// Fact: CUTLASS's persistent and stream-K schedules launch one CTA per resident slot (SMs x CTAs
// per SM) instead of one per output tile; each CTA loops over tiles, and stream-K gives every CTA
// an equal share of the tile work, reducing partial tiles across CTAs ("fixup"). Osama et al.,
// "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix Multiplication on the
// GPU" (PPoPP 2023); CUTLASS docs, "Efficient GEMM in CUDA" (persistent kernels).
// Assumptions of tessera: the kernel polls a preemption flag between two tiles of its loop (an
// instrumented kernel, as CoGPU's persistent kernels are; stock CUTLASS does not poll), at most
// `max_checkpoints` times per launch, evenly spaced through its work; a CTA's share costs its
// tiles' FLOPs and DRAM bytes pro rata (fixup traffic is not modelled).

#include <cstdint>
#include <functional>

#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

// Blocks of one shape the SMs a persistent grid is sized for hold at once (SMs x blocks per SM,
// device::blocks_per_sm); 0 if one does not fit.
using Residency = std::function<std::int64_t(const BlockResources& block)>;

// `kernel` as a persistent kernel of min(blocks, resident_blocks) blocks, each with an equal
// share of the original grid's work (total FLOPs and bytes unchanged), polling between tiles:
// checkpoints = tiles per block rounded up, minus one, at most `max_checkpoints`. It stays
// block-independent only if it was and the tiles divide evenly (otherwise stream-K's fixup joins
// blocks). Returned unchanged: a grid no larger than the residency (one tile per block, nothing
// to loop over), resident_blocks < 1, or a kernel that already has checkpoints.
Kernel make_persistent(const Kernel& kernel, std::int64_t resident_blocks, int max_checkpoints);

// `sequence` with every GEMM and convolution kernel (KernelClass kGemm, kConv) made persistent
// with the residency of its block shape; other kernels, the grouping and the phase are kept.
KernelSequence persistent_gemms(const KernelSequence& sequence, const Residency& residency,
                                int max_checkpoints);

}  // namespace tessera::workload
