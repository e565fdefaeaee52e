#include "tessera/workload/kernels/gemm_shapes.hpp"

#include <gtest/gtest.h>

#include "tessera/workload/kernels/memory_bound.hpp"

namespace tessera::workload {
namespace {

TEST(GemmTilingTest, LargeGemmUses128TilesWithoutSplit) {
  const GemmTiling t = choose_gemm_tiling(2048, 6144, 4096);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.split_k, 1);
  EXPECT_EQ(t.blocks(), 16 * 48);
  EXPECT_EQ(t.block.threads, 256);
  // Two stages of a 128x64 and a 64x128 BF16 tile.
  EXPECT_EQ(t.block.shared_memory_bytes, 2 * (128 * 64 + 64 * 128) * 2);
}

TEST(GemmTilingTest, SkinnyGemmSplitsKToFillTheGrid) {
  // A decode-step output projection: one row, 4096 outputs = 64 tiles of 64.
  const GemmTiling t = choose_gemm_tiling(1, 4096, 4096);
  EXPECT_EQ(t.tile_m, 64);
  EXPECT_EQ(t.tiles_n, 64);
  EXPECT_GT(t.split_k, 1);
  EXPECT_GE(t.blocks(), 256);
  EXPECT_EQ(t.block.shared_memory_bytes, 2 * (64 * 64 + 64 * 64) * 2);
}

TEST(GemmTilingTest, SplitKNeverMakesSlicesShallowerThanFourStages) {
  const GemmTiling t = choose_gemm_tiling(1, 64, 512);  // one tile, K of only 512
  EXPECT_LE(t.split_k, 2);
  EXPECT_GE(512 / t.split_k, 256);
  const GemmTiling tiny = choose_gemm_tiling(1, 64, 64);
  EXPECT_EQ(tiny.split_k, 1);
}

TEST(GemmTilingTest, DegenerateDimensionsStillGiveOneBlock) {
  const GemmTiling t = choose_gemm_tiling(0, -5, 0);
  EXPECT_EQ(t.blocks(), 1);
}

TEST(MakeGemmTest, FlopsAreTwoMnkAndBytesEachOperandOnce) {
  const Kernel k = make_gemm(dense_gemm("g", 1000, 3000, 500, 2));
  EXPECT_DOUBLE_EQ(k.total_flops(), 2.0 * 1000 * 3000 * 500);
  EXPECT_NEAR(k.total_bytes(), 2.0 * (1000.0 * 500 + 500.0 * 3000 + 1000.0 * 3000), 1.0);
  EXPECT_EQ(k.pipe, ComputePipe::kTensorFp16);
  EXPECT_TRUE(k.block_independent);
}

TEST(MakeGemmTest, SplitKAddsPartialSumTrafficAndIsNotBlockIndependent) {
  const GemmDesc d = dense_gemm("skinny", 4, 4096, 14336, 2);
  const Kernel k = make_gemm(d);
  const GemmTiling t = choose_gemm_tiling(4, 4096, 14336);
  ASSERT_GT(t.split_k, 1);
  EXPECT_FALSE(k.block_independent);
  EXPECT_EQ(k.blocks, t.blocks());
  const double operands = d.a_bytes + d.b_bytes + d.c_bytes;
  EXPECT_NEAR(k.total_bytes(), operands + 2.0 * (t.split_k - 1) * 4 * 4096 * 4, 1.0);
}

TEST(MemoryBoundTest, ElementwiseBlocksCover1024ValuesEach) {
  EXPECT_EQ(elementwise_blocks(1), 1);
  EXPECT_EQ(elementwise_blocks(1024), 1);
  EXPECT_EQ(elementwise_blocks(1025), 2);
  EXPECT_EQ(elementwise_blocks(0), 1);
}

TEST(MemoryBoundTest, RowThreadsAreWholeWarpsUpTo1024) {
  EXPECT_EQ(row_threads(1), 32);
  EXPECT_EQ(row_threads(100), 128);
  EXPECT_EQ(row_threads(4096), 1024);
}

TEST(MemoryBoundTest, KernelSpreadsTotalsOverBlocksOnTheFp32Pipe) {
  const Kernel k = memory_bound({.name = "m", .blocks = 8, .flops = 80, .bytes = 800});
  EXPECT_EQ(k.pipe, ComputePipe::kFp32);
  EXPECT_DOUBLE_EQ(k.flops_per_block, 10);
  EXPECT_DOUBLE_EQ(k.total_bytes(), 800);
}

}  // namespace
}  // namespace tessera::workload
