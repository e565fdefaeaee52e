// A model served in FP8 (vLLM's W8A8): each linear layer is a per-token quantization kernel and
// an FP8 GEMM with 1-byte activations and weights; the rest of the step is unchanged, and the
// weights count 1 byte for the linear layers and 2 for the rest.

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {
namespace {

std::vector<Kernel> layer(const ModelConfig& m) {
  const std::vector<int> ctx = {100};
  return decode_step(m, ctx).groups.at(1).kernels;
}

const Kernel* named(const std::vector<Kernel>& ks, std::string_view name) {
  for (const Kernel& k : ks) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

TEST(Fp8Serving, EachLinearLayerIsAQuantizationAndAnFp8Gemm) {
  ModelConfig m = *find_model("llama-3-8b");
  const std::vector<Kernel> bf16 = layer(m);
  m.precision = Precision::kFp8;
  ASSERT_TRUE(m.validate().has_value());
  const std::vector<Kernel> fp8 = layer(m);
  // QKV, output, gate/up and down each gain a quantization kernel.
  EXPECT_EQ(fp8.size(), bf16.size() + 4);
  int quant = 0;
  for (std::size_t i = 0; i < fp8.size(); ++i) {
    if (fp8[i].name != "fp8_quant") continue;
    ++quant;
    ASSERT_LT(i + 1, fp8.size());
    EXPECT_EQ(fp8[i + 1].pipe, ComputePipe::kTensorFp8) << fp8[i + 1].name;
  }
  EXPECT_EQ(quant, 4);
  // A one-token gate/up GEMM streams its weights: 4096 x 28672 at 1 byte instead of 2.
  const Kernel* up16 = named(bf16, "gate_up_proj");
  const Kernel* up8 = named(fp8, "gate_up_proj");
  ASSERT_TRUE(up16 && up8);
  EXPECT_DOUBLE_EQ(up16->total_flops(), up8->total_flops());
  EXPECT_NEAR(up8->total_bytes(), 4096.0 * 28672, 0.001 * 4096 * 28672);
  EXPECT_NEAR(up16->total_bytes(), 2 * 4096.0 * 28672, 0.001 * 4096 * 28672);
  // Attention and the norms are untouched.
  EXPECT_DOUBLE_EQ(named(fp8, "input_rmsnorm")->total_bytes(),
                   named(bf16, "input_rmsnorm")->total_bytes());
}

TEST(Fp8Serving, WeightBytesCountTheLinearLayersAtOneByte) {
  ModelConfig m = *find_model("llama-3-8b");
  const double bf16 = m.weight_bytes();
  m.precision = Precision::kFp8;
  // 32 layers of 4096 x (4096 + 2 x 1024) + 4096 x 4096 + 3 x 4096 x 14336 linear weights, half
  // as many bytes; the embeddings and the LM head keep theirs.
  const double linear = 32 * (4096.0 * 6144 + 4096.0 * 4096 + 3 * 4096.0 * 14336);
  EXPECT_DOUBLE_EQ(bf16 - m.weight_bytes(), linear);
}

TEST(Fp8Serving, TrainingFormatsAreNotServingFormats) {
  ModelConfig m = *find_model("llama-3-8b");
  m.precision = Precision::kTf32;
  ASSERT_FALSE(m.validate().has_value());
  EXPECT_NE(m.validate().error().message().find("training format"), std::string::npos);
}

}  // namespace
}  // namespace tessera::workload
