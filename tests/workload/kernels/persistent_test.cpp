// Persistent GEMM variants: the same work on a grid sized to residency, with checkpoints between
// tiles.

#include "tessera/workload/kernels/persistent.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/device/occupancy.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"

namespace tessera::workload {
namespace {

Kernel gemm(std::int64_t blocks) {
  return Kernel{.name = "gemm",
                .kind = KernelClass::kGemm,
                .pipe = ComputePipe::kTensorFp16,
                .blocks = blocks,
                .flops_per_block = 3.0e7,
                .bytes_per_block = 1.1e5};
}

void expect_same_work(double before, double after) {
  EXPECT_LE(std::abs(after - before), 1e-12 * before) << before << " vs " << after;
}

TEST(MakePersistent, SpreadsTheTilesOverTheResidentGridWithTheSameWork) {
  const Kernel k = gemm(1000);
  const Kernel p = make_persistent(k, 264, 64);
  EXPECT_EQ(p.blocks, 264);
  expect_same_work(k.total_flops(), p.total_flops());
  expect_same_work(k.total_bytes(), p.total_bytes());
  // 1000 / 264 = 3.8 tiles per block: four tiles at most, three boundaries between them.
  EXPECT_EQ(p.checkpoints, 3);
  // The last tiles are shared between blocks (stream-K fixup), so blocks depend on each other.
  EXPECT_FALSE(p.block_independent);
  // Launch shape of a block is the tile's.
  EXPECT_EQ(p.block.threads, k.block.threads);
  EXPECT_EQ(p.name, k.name);
}

TEST(MakePersistent, EvenTilesKeepBlocksIndependentAndTheCapBoundsCheckpoints) {
  const Kernel p = make_persistent(gemm(264 * 40), 264, 16);
  EXPECT_EQ(p.blocks, 264);
  EXPECT_TRUE(p.block_independent);
  EXPECT_EQ(p.checkpoints, 16);  // 39 boundaries, capped
  EXPECT_EQ(make_persistent(gemm(264 * 2), 264, 16).checkpoints, 1);
  EXPECT_EQ(make_persistent(gemm(264 * 2), 264, 0).checkpoints, 0);
}

TEST(MakePersistent, LeavesKernelsWithNothingToLoopOverAlone) {
  const Kernel small = gemm(264);
  const Kernel same = make_persistent(small, 264, 16);
  EXPECT_EQ(same.blocks, 264);
  EXPECT_EQ(same.checkpoints, 0);
  EXPECT_EQ(make_persistent(gemm(1000), 0, 16).blocks, 1000);  // a block that does not fit
  Kernel polled = gemm(1000);
  polled.checkpoints = 5;
  EXPECT_EQ(make_persistent(polled, 264, 16).blocks, 1000);
}

TEST(PersistentGemms, ResNetIterationKeepsItsWorkAndSizesGridsToResidency) {
  const auto gpu = hw::find_gpu("h100");
  ASSERT_TRUE(gpu.has_value());
  const int sms = 120;
  const Residency residency = [&](const BlockResources& b) -> std::int64_t {
    return static_cast<std::int64_t>(sms) * device::blocks_per_sm(gpu->sm, b);
  };
  KernelSequence plain = resnet50_iteration(64);
  plain.phase = Phase::kTraining;
  const KernelSequence p = persistent_gemms(plain, residency, 32);
  EXPECT_EQ(p.phase, Phase::kTraining);
  ASSERT_EQ(p.groups.size(), plain.groups.size());
  expect_same_work(plain.total_flops(), p.total_flops());
  expect_same_work(plain.total_bytes(), p.total_bytes());
  EXPECT_EQ(p.kernel_count(), plain.kernel_count());
  int persistent = 0;
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    ASSERT_EQ(p.groups[g].kernels.size(), plain.groups[g].kernels.size());
    EXPECT_EQ(p.groups[g].repeat, plain.groups[g].repeat);
    for (std::size_t i = 0; i < p.groups[g].kernels.size(); ++i) {
      const Kernel& before = plain.groups[g].kernels[i];
      const Kernel& after = p.groups[g].kernels[i];
      const bool gemm_like = before.kind == KernelClass::kGemm || before.kind == KernelClass::kConv;
      if (!gemm_like) {
        EXPECT_EQ(after.blocks, before.blocks) << before.name;
        EXPECT_EQ(after.checkpoints, 0) << before.name;
        continue;
      }
      expect_same_work(before.total_flops(), after.total_flops());
      EXPECT_EQ(after.blocks, std::min(before.blocks, residency(before.block))) << before.name;
      EXPECT_LE(after.checkpoints, 32);
      if (after.checkpoints > 0) ++persistent;
    }
  }
  // ResNet-50 at batch 64 has convolutions with many more tiles than 120 SMs hold.
  EXPECT_GT(persistent, 10);
}

}  // namespace
}  // namespace tessera::workload
