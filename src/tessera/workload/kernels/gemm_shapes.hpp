#pragma once
// Launch shapes for GEMM-like kernels: dense layers, implicit-GEMM convolutions and their
// gradients. Shared by the transformer and training builders so every model is tiled alike.
//
// The tiling heuristic mimics cuBLAS/CUTLASS roughly; it is an assumption, not a copy of any
// library's kernel selection:
//   * M > 64: 128x128 output tiles, 256 threads, a 2-stage pipeline of 128x64 (A) and 64x128 (B)
//     BF16 tiles in shared memory.
//   * M <= 64 (skinny decode GEMMs): 64x64 output tiles, 128 threads, 2-stage 64x64 tiles.
//   * Split-K (slices of K reduced in-kernel, one slice after another through an FP32 workspace)
//     when the output tiles alone would give a small grid.

#include <cstdint>
#include <string_view>

#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/kernels/precision.hpp"

namespace tessera::workload {

struct GemmTiling {
  int tile_m = 0;
  int tile_n = 0;
  int split_k = 1;  // K slices; 1 means no split
  std::int64_t tiles_m = 0;
  std::int64_t tiles_n = 0;
  BlockResources block;

  std::int64_t blocks() const { return tiles_m * tiles_n * split_k; }
};

// Tiling of C[m,n] = A[m,k] x B[k,n] with operands of `operand_bytes` (the shared-memory
// footprint); dimensions below 1 are treated as 1.
GemmTiling choose_gemm_tiling(std::int64_t m, std::int64_t n, std::int64_t k,
                              int operand_bytes = 2);

// The pipe a GEMM in this format runs on: the tensor cores for FP8, BF16/FP16 and TF32, the CUDA
// cores for FP32.
ComputePipe gemm_pipe(Precision p);

// One GEMM with the DRAM traffic of each operand stated by the caller: a dense layer moves each
// operand once (dense_gemm); an implicit-GEMM convolution reads the activation tensor, not the
// im2col matrix, so its A traffic is smaller than m*k elements.
struct GemmDesc {
  std::string_view name;  // a string literal
  KernelClass kind = KernelClass::kGemm;
  std::int64_t m = 1;
  std::int64_t n = 1;
  std::int64_t k = 1;
  double a_bytes = 0;
  double b_bytes = 0;
  double c_bytes = 0;
  double epilogue_flops = 0;               // bias or activation fused into the epilogue
  Precision precision = Precision::kBf16;  // the operands' format: the pipe and tile footprint
  // A grouped GEMM: this many GEMMs of m x n x k in one launch (their tiles side by side in one
  // grid, as vLLM's fused MoE kernel runs every expert); the bytes above are the whole launch's.
  std::int64_t groups = 1;
};

// FLOPs 2*m*n*k per group (+ epilogue) on the tensor pipe. A split-K launch adds its FP32
// partial-sum traffic and is not block-independent (its slices wait for each other); a grouped
// GEMM is not split.
Kernel make_gemm(const GemmDesc& g);

// A dense GEMM whose three operands are `elem_bytes` wide and each cross DRAM once (L2 keeps
// re-read tiles on chip: an assumption that holds for the tile sizes above).
GemmDesc dense_gemm(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k,
                    int elem_bytes);
// The same in `precision`: operands of its element size, on its pipe.
GemmDesc dense_gemm(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k,
                    Precision precision);

}  // namespace tessera::workload
