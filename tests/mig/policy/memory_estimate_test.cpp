#include "tessera/mig/policy/memory_estimate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "tessera/workload/models/transformer.hpp"

namespace tessera::mig {
namespace {

std::int64_t model_states(const MemoryBreakdown& m) {
  return m.weights + m.gradients + m.optimizer_state;
}

TEST(MemoryEstimateTest, MixedPrecisionAdamIsSixteenBytesPerParameter) {
  // ZeRO (Rajbhandari et al., SC'20) §3.1: a 7.5B-parameter model with mixed-precision Adam
  // needs 16 x 7.5B = 120 GB of model states.
  const auto m = estimate_training({.parameters = 7.5e9, .optimizer = Optimizer::kAdam});
  EXPECT_EQ(m.weights, 15'000'000'000);
  EXPECT_EQ(m.gradients, 15'000'000'000);
  EXPECT_EQ(m.optimizer_state, 90'000'000'000);
  EXPECT_EQ(model_states(m), 120'000'000'000);
}

TEST(MemoryEstimateTest, OptimizerStatePerParameter) {
  const auto states = [](Optimizer o, bool mp) {
    return model_states(
        estimate_training({.parameters = 1000, .optimizer = o, .mixed_precision = mp}));
  };
  EXPECT_EQ(states(Optimizer::kAdam, false), 16'000);         // 4 + 4 + (4 + 4)
  EXPECT_EQ(states(Optimizer::kSgdMomentum, true), 12'000);   // 2 + 2 + (4 + 4)
  EXPECT_EQ(states(Optimizer::kSgdMomentum, false), 12'000);  // 4 + 4 + 4
  EXPECT_EQ(states(Optimizer::kSgd, true), 8'000);            // 2 + 2 + 4 master
  EXPECT_EQ(states(Optimizer::kSgd, false), 8'000);           // 4 + 4
}

TEST(MemoryEstimateTest, ActivationsScaleWithBatch) {
  const double per_sample = activation_bytes_per_sample("bert-base");
  const auto m8 =
      estimate_training({.parameters = 1e8, .batch = 8, .activation_bytes_per_sample = per_sample});
  const auto m16 = estimate_training(
      {.parameters = 1e8, .batch = 16, .activation_bytes_per_sample = per_sample});
  EXPECT_EQ(m8.activations, static_cast<std::int64_t>(std::ceil(8 * per_sample)));
  EXPECT_GT(m16.activations, m8.activations);
  EXPECT_EQ(m16.weights, m8.weights);
  EXPECT_GT(m8.workspace, 0);
  EXPECT_GT(m8.framework_context, 0);
  EXPECT_EQ(m8.total(), m8.weights + m8.gradients + m8.optimizer_state + m8.activations +
                            m8.workspace + m8.framework_context);
}

TEST(MemoryEstimateTest, BertActivationsFollowKorthikantiWithoutTheScoreTerm) {
  // Korthikanti et al. 2022, Eq. 1 per layer, less the 5as/h attention-score term that
  // FlashAttention does not save, plus its FP32 log-sum-exp; embeddings and masked-LM head.
  const double s = 128, h = 768, a = 12, layers = 12, vocab = 30522;
  const double expected = layers * (s * h * 34 + 4 * a * s) + 3 * s * h + 8 * s * h + 4 * s * vocab;
  EXPECT_DOUBLE_EQ(activation_bytes_per_sample("bert-base", 128), expected);
  EXPECT_GT(activation_bytes_per_sample("bert-base", 512),
            activation_bytes_per_sample("bert-base", 128));
  // BERT's learned positions stop at 512.
  EXPECT_DOUBLE_EQ(activation_bytes_per_sample("bert-base", 4096),
                   activation_bytes_per_sample("bert-base", 512));
}

TEST(MemoryEstimateTest, BertLargeActivationsAreTheSameFormulaAtItsSize) {
  // BERT-large: 24 layers, hidden 1024, 16 heads (Devlin et al. 2019, Sec. 3).
  const double s = 128, h = 1024, a = 16, layers = 24, vocab = 30522;
  const double expected = layers * (s * h * 34 + 4 * a * s) + 3 * s * h + 8 * s * h + 4 * s * vocab;
  // 124.2 MB per sequence of 128 tokens: 3.70 GiB saved for backward at the default batch of 32.
  EXPECT_DOUBLE_EQ(activation_bytes_per_sample("bert-large", 128), expected);
  EXPECT_GT(activation_bytes_per_sample("bert-large", 128),
            2 * activation_bytes_per_sample("bert-base", 128));
}

TEST(MemoryEstimateTest, Resnet50ActivationsAreDerivedFromItsShapes) {
  const double bytes = activation_bytes_per_sample("resnet-50");
  // The stem alone: the image (3x224x224), conv1 and BN+ReLU outputs (2 x 64x112x112), the
  // pooled map (64x56x56) in FP16, and its int64 indices.
  const double stem =
      2.0 * (3 * 224 * 224 + 2 * 64 * 112 * 112 + 64 * 56 * 56) + 8.0 * 64 * 56 * 56;
  EXPECT_GT(bytes, stem);
  // Stage 1's first block: 2 x (64x56x56) x 2 for conv1/conv2 and their BN+ReLU outputs, then
  // 3 x 256x56x56 (conv3, shortcut, block output); the whole net stays within an order.
  const double stage1_first = 2.0 * (4 * 64 * 56 * 56 + 3 * 256 * 56 * 56);
  EXPECT_GT(bytes, stem + stage1_first);
  EXPECT_LT(bytes, 200e6);
  EXPECT_DOUBLE_EQ(activation_bytes_per_sample("no-such-model"), 0);
}

TEST(MemoryEstimateTest, Llama3InferenceWeightsAndKvCache) {
  const auto model = workload::find_model("llama-3-8b");
  ASSERT_TRUE(model.has_value()) << model.error().message();
  const auto m = estimate_inference(*model, 4, 4096);
  EXPECT_EQ(m.weights, static_cast<std::int64_t>(std::ceil(model->weight_bytes())));
  // K and V, 32 layers x 8 KV heads x 128 dims x 2 B = 128 KiB per token.
  EXPECT_DOUBLE_EQ(model->kv_bytes_per_token(), 131072.0);
  EXPECT_EQ(m.kv_cache, std::int64_t{131072} * 4 * 4096);
  EXPECT_EQ(m.gradients, 0);
  EXPECT_EQ(m.optimizer_state, 0);
  // The widest intermediate is the FP32 logits: 4 B x 128,256 per sequence.
  EXPECT_EQ(m.activations, std::int64_t{4} * 4 * 128256);
}

TEST(MemoryEstimateTest, InferenceIsMonotoneInBatchAndContext) {
  const auto model = workload::find_model("llama-3-8b");
  ASSERT_TRUE(model.has_value());
  std::int64_t prev = 0;
  for (int batch : {1, 2, 8, 32}) {
    const std::int64_t total = estimate_inference(*model, batch, 2048).total();
    EXPECT_GT(total, prev);
    prev = total;
  }
  prev = 0;
  for (std::int64_t ctx : {0, 512, 8192, 131072}) {
    const std::int64_t total = estimate_inference(*model, 4, ctx).total();
    EXPECT_GT(total, prev);
    prev = total;
  }
}

TEST(MemoryEstimateTest, DescribeListsEveryNonzeroPart) {
  const auto model = workload::find_model("llama-3-8b");
  ASSERT_TRUE(model.has_value());
  const std::string inference = estimate_inference(*model, 4, 4096).describe();
  for (const char* part :
       {"weights", "kv cache", "activations", "workspace", "framework context", "total"}) {
    EXPECT_NE(inference.find(part), std::string::npos) << part << " in " << inference;
  }
  EXPECT_EQ(inference.find("gradients"), std::string::npos) << inference;
  EXPECT_EQ(inference.find("optimizer"), std::string::npos) << inference;
  // 128 KiB/token x 4 x 4096 = 2 GiB of KV cache.
  EXPECT_NE(inference.find("kv cache 2.00 GiB"), std::string::npos) << inference;
  // 4 sequences x 4 B x 128,256 logits = 2.0 MiB, too small for GiB.
  EXPECT_NE(inference.find("activations 2.0 MiB"), std::string::npos) << inference;
  EXPECT_NE(inference.find("workspace 32.0 MiB"), std::string::npos) << inference;

  const std::string training = estimate_training({.parameters = 1e8}).describe();
  EXPECT_NE(training.find("gradients"), std::string::npos) << training;
  EXPECT_NE(training.find("optimizer state"), std::string::npos) << training;
  EXPECT_EQ(training.find("kv cache"), std::string::npos) << training;
  EXPECT_EQ(training.find("activations"), std::string::npos) << training;
  EXPECT_EQ(MemoryBreakdown{}.describe(), "nothing = total 0.00 GiB");
}

}  // namespace
}  // namespace tessera::mig
