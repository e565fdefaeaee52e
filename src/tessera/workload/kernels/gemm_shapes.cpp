#include "tessera/workload/kernels/gemm_shapes.hpp"

#include <algorithm>

namespace tessera::workload {

namespace {

// Assumptions (see gemm_shapes.hpp): tile shapes, threads and registers in the range CUTLASS's
// SM80 BF16 tensor-op kernels use; not measured.
constexpr int kLargeTile = 128;
constexpr int kLargeThreads = 256;
constexpr int kLargeRegisters = 128;  // 64 FP32 accumulators per thread plus operand fragments
constexpr int kSkinnyTile = 64;
constexpr int kSkinnyThreads = 128;
constexpr int kSkinnyRegisters = 96;
constexpr int kTileK = 64;  // depth of one pipeline stage
constexpr int kStages = 2;  // double buffering
constexpr int kSkinnyMaxM = 64;

// Split-K assumptions: aim for about two waves on the catalog's 108-132-SM GPUs, never leave a
// slice shallower than four pipeline stages, and cap the split like library heuristics do.
constexpr std::int64_t kTargetBlocks = 256;
constexpr std::int64_t kMinKPerSlice = 4 * kTileK;
constexpr int kMaxSplitK = 32;
constexpr double kPartialSumBytes = 4;  // FP32 workspace

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

GemmTiling choose_gemm_tiling(std::int64_t m, std::int64_t n, std::int64_t k, int operand_bytes) {
  m = std::max<std::int64_t>(m, 1);
  n = std::max<std::int64_t>(n, 1);
  k = std::max<std::int64_t>(k, 1);
  const bool skinny = m <= kSkinnyMaxM;
  GemmTiling t;
  t.tile_m = skinny ? kSkinnyTile : kLargeTile;
  t.tile_n = skinny ? kSkinnyTile : kLargeTile;
  t.block.threads = skinny ? kSkinnyThreads : kLargeThreads;
  t.block.registers_per_thread = skinny ? kSkinnyRegisters : kLargeRegisters;
  t.block.shared_memory_bytes =
      static_cast<std::int64_t>(kStages) * (t.tile_m + t.tile_n) * kTileK * operand_bytes;
  t.tiles_m = ceil_div(m, t.tile_m);
  t.tiles_n = ceil_div(n, t.tile_n);
  const std::int64_t tiles = t.tiles_m * t.tiles_n;
  while (tiles * t.split_k < kTargetBlocks && t.split_k < kMaxSplitK &&
         k / (2 * t.split_k) >= kMinKPerSlice) {
    t.split_k *= 2;
  }
  return t;
}

ComputePipe gemm_pipe(Precision p) {
  switch (p) {
    case Precision::kFp8: return ComputePipe::kTensorFp8;
    case Precision::kBf16:
    case Precision::kFp16: return ComputePipe::kTensorFp16;
    case Precision::kTf32: return ComputePipe::kTensorTf32;
    case Precision::kFp32: return ComputePipe::kFp32;
  }
  return ComputePipe::kTensorFp16;
}

Kernel make_gemm(const GemmDesc& g) {
  GemmTiling t = choose_gemm_tiling(g.m, g.n, g.k, element_bytes(g.precision));
  const std::int64_t groups = std::max<std::int64_t>(g.groups, 1);
  if (groups > 1) t.split_k = 1;
  const double m = static_cast<double>(g.m);
  const double n = static_cast<double>(g.n);
  const double k = static_cast<double>(g.k);
  double bytes = g.a_bytes + g.b_bytes + g.c_bytes;
  // Serial split-K: every slice but the last writes an FP32 partial tile that the next reads.
  bytes += 2.0 * (t.split_k - 1) * m * n * kPartialSumBytes;
  const double flops = static_cast<double>(groups) * 2.0 * m * n * k + g.epilogue_flops;
  const auto blocks = t.blocks() * groups;
  return Kernel{
      .name = g.name,
      .kind = g.kind,
      .pipe = gemm_pipe(g.precision),
      .blocks = blocks,
      .block = t.block,
      .flops_per_block = flops / static_cast<double>(blocks),
      .bytes_per_block = bytes / static_cast<double>(blocks),
      // The slices of one output tile wait on each other's partial sums, so a block range
      // that separates them could not run on its own.
      .block_independent = t.split_k == 1,
      .gemm = {.m = g.m,
               .n = g.n,
               .k = g.k,
               .operand_bytes = g.a_bytes + g.b_bytes + g.c_bytes,
               .groups = groups},
  };
}

GemmDesc dense_gemm(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k,
                    int elem_bytes) {
  const double e = elem_bytes;
  return GemmDesc{
      .name = name,
      .kind = KernelClass::kGemm,
      .m = m,
      .n = n,
      .k = k,
      .a_bytes = static_cast<double>(m) * static_cast<double>(k) * e,
      .b_bytes = static_cast<double>(k) * static_cast<double>(n) * e,
      .c_bytes = static_cast<double>(m) * static_cast<double>(n) * e,
  };
}

GemmDesc dense_gemm(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k,
                    Precision precision) {
  GemmDesc g = dense_gemm(name, m, n, k, element_bytes(precision));
  g.precision = precision;
  return g;
}

}  // namespace tessera::workload
