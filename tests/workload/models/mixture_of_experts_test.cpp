// A mixture of experts (Mixtral-8x7B) as vLLM's fused MoE kernels: which experts a step's
// tokens reach, the grouped GEMMs' work and weight traffic, and the catalog entry's size.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "tessera/workload/models/tensor_parallel.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {
namespace {

ModelConfig mixtral() {
  return *find_model("mixtral-8x7b");
}

// A copy: the sequences the tests build are temporaries.
Kernel layer_kernel(const KernelSequence& s, std::string_view name) {
  for (const Kernel& k : s.groups.at(1).kernels) {
    if (k.name == name) return k;
  }
  ADD_FAILURE() << "no kernel " << name;
  return {};
}

TEST(MixtureOfExperts, TheCatalogEntryHasMixtralsSize) {
  const ModelConfig m = mixtral();
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
  // Mistral AI's model card: 46.7 B parameters in all.
  EXPECT_NEAR(m.parameters() / 1e9, 46.7, 0.1);
}

TEST(MixtureOfExperts, ABatchOfOneReadsTwoExpertsWeightsAndManyTokensAllEight) {
  const ModelConfig m = mixtral();
  const double expert_gate_up = 2.0 * 14336 * 4096 * 2;  // bytes of one expert's w1 and w3
  const std::vector<int> one = {100};
  const Kernel decode = layer_kernel(decode_step(m, one), "moe_gate_up");
  EXPECT_EQ(decode.gemm.groups, 2);
  EXPECT_EQ(decode.gemm.m, 1);
  EXPECT_DOUBLE_EQ(decode.total_flops(), 2.0 * 2 * 1 * (2 * 14336) * 4096);
  EXPECT_NEAR(decode.total_bytes(), 2 * expert_gate_up, 0.01 * expert_gate_up);
  // 512 tokens: 1 - (6/8)^512 of the experts, i.e. all of them, 128 token rows each.
  const std::vector<int> prompt = {512};
  const Kernel prefill = layer_kernel(prefill_step(m, prompt), "moe_gate_up");
  EXPECT_EQ(prefill.gemm.groups, 8);
  EXPECT_EQ(prefill.gemm.m, 128);
  EXPECT_DOUBLE_EQ(prefill.total_flops(), 8 * 2.0 * 128 * (2 * 14336) * 4096);
}

TEST(MixtureOfExperts, ADecodeStepOfFourReachesTheExpectedExperts) {
  // 8 (1 - (6/8)^4) = 5.47: six experts, rows ceil(8 / 6) = 2 each.
  const std::vector<int> four(4, 50);
  const Kernel down = layer_kernel(decode_step(mixtral(), four), "moe_down");
  EXPECT_EQ(down.gemm.groups, 6);
  EXPECT_EQ(down.gemm.m, 2);
  EXPECT_EQ(down.gemm.n, 4096);
  EXPECT_EQ(down.gemm.k, 14336);
}

TEST(MixtureOfExperts, TheLayerIsTheFusedMoeSequenceAndTensorParallelReducesAfterTheSum) {
  const std::vector<int> ctx = {10};
  const KernelSequence s = decode_step(mixtral(), ctx);
  std::vector<std::string_view> names;
  for (const Kernel& k : s.groups.at(1).kernels) names.push_back(k.name);
  const std::vector<std::string_view> moe = {
      "moe_router", "moe_topk_softmax", "moe_align_block_size", "moe_gate_up", "silu_and_mul",
      "moe_down",   "moe_sum"};
  const auto at = std::search(names.begin(), names.end(), moe.begin(), moe.end());
  EXPECT_NE(at, names.end());
  const KernelSequence tp = tp_decode_step(mixtral(), TensorParallel{.degree = 2}, ctx);
  std::vector<std::string_view> sharded;
  for (const Kernel& k : tp.groups.at(1).kernels) sharded.push_back(k.name);
  const auto sum = std::find(sharded.begin(), sharded.end(), "moe_sum");
  ASSERT_NE(sum, sharded.end());
  ASSERT_NE(sum + 1, sharded.end());
  EXPECT_EQ(*(sum + 1), "mlp_all_reduce");
}

TEST(MixtureOfExperts, ExpertsPerTokenMustFitTheExperts) {
  ModelConfig m = mixtral();
  m.experts_per_token = 9;
  ASSERT_FALSE(m.validate().has_value());
  EXPECT_NE(m.validate().error().message().find("experts_per_token"), std::string::npos);
  m.experts = 0;
  m.experts_per_token = 0;
  EXPECT_TRUE(m.validate().has_value());
}

}  // namespace
}  // namespace tessera::workload
