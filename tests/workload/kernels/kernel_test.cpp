#include "tessera/workload/kernels/kernel.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tessera::workload {
namespace {

Kernel kernel(double flops, double bytes, std::int64_t blocks) {
  return Kernel{.name = "k", .blocks = blocks, .flops_per_block = flops, .bytes_per_block = bytes};
}

TEST(KernelClassTest, EveryClassHasADistinctName) {
  const KernelClass all[] = {
      KernelClass::kGemm,      KernelClass::kConv,          KernelClass::kAttention,
      KernelClass::kNorm,      KernelClass::kElementwise,   KernelClass::kReduction,
      KernelClass::kPointwise, KernelClass::kEmbedding,     KernelClass::kSampling,
      KernelClass::kOptimizer, KernelClass::kCommunication, KernelClass::kOther};
  std::set<std::string> names;
  for (auto c : all) names.emplace(to_string(c));
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(to_string(KernelClass::kGemm), "gemm");
  EXPECT_EQ(to_string(KernelClass::kAttention), "attention");
}

TEST(KernelSequenceTest, TotalsCountEveryRepetition) {
  KernelSequence seq;
  seq.groups.push_back({.kernels = {kernel(10, 1, 4)}, .repeat = 1});                  // 40 F, 4 B
  seq.groups.push_back({.kernels = {kernel(2, 3, 5), kernel(1, 1, 1)}, .repeat = 3});  // x3
  EXPECT_EQ(seq.kernel_count(), 1 + 2 * 3);
  EXPECT_DOUBLE_EQ(seq.total_flops(), 40 + 3 * (10 + 1));
  EXPECT_DOUBLE_EQ(seq.total_bytes(), 4 + 3 * (15 + 1));
}

TEST(KernelSequenceTest, EmptySequenceIsZero) {
  const KernelSequence seq;
  EXPECT_EQ(seq.kernel_count(), 0);
  EXPECT_EQ(seq.total_flops(), 0);
  EXPECT_EQ(seq.total_bytes(), 0);
}

}  // namespace
}  // namespace tessera::workload
