// The host reference of the decode model: the step's semantics against a plain re-computation,
// the fixed variant's independence of the partition, the drift variant's dependence on it, and
// the kernel order it enforces.

#include "tessera/experiment/determinism_reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <span>

#include "tessera/workload/models/compute_steps.hpp"

namespace tessera::experiment {
namespace {

namespace cd = workload::compute_data;
namespace cs = workload::compute_steps;

constexpr cd::DecodeShape kShape{.batch = 2, .hidden = 256, .vocab = 1024};

std::unique_ptr<HostDecodeModel> make(GemmVariant variant) {
  auto model = HostDecodeModel::create({.shape = kShape, .variant = variant});
  EXPECT_TRUE(model.has_value());
  return std::move(model.value());
}

workload::StepOutput run_step(HostDecodeModel& model, int lm_head_sms) {
  for (auto name : {cs::kDecodeEmbed, cs::kDecodeLmHead, cs::kDecodeSoftmax, cs::kDecodeArgmax}) {
    const int sms = name == cs::kDecodeLmHead ? lm_head_sms : 4;
    EXPECT_TRUE(model.run_kernel(name, {.partition_sms = sms}).has_value()) << name;
  }
  auto out = model.finish_step();
  EXPECT_TRUE(out.has_value());
  return out.value();
}

std::uint64_t checksum(const workload::StepOutput& out, std::string_view kernel) {
  for (const auto& [name, sum] : out.kernel_checksums) {
    if (name == kernel) return sum;
  }
  ADD_FAILURE() << "no checksum for " << kernel;
  return 0;
}

// The first step, recomputed independently: one fixed-order fp32 sum per logit (k = 0..H-1),
// softmax and argmax as the reference documents them.
struct Expected {
  std::vector<float> logits;
  std::vector<std::int32_t> tokens;
};
Expected first_step(std::uint64_t seed) {
  const auto h = static_cast<std::size_t>(kShape.hidden);
  const auto v = static_cast<std::size_t>(kShape.vocab);
  const auto e = cd::generate_fp16(seed, cd::Tensor::kDecodeEmbedding, v * h);
  const auto w = cd::generate_fp16(seed, cd::Tensor::kDecodeLmHead, v * h);
  Expected out;
  for (int b = 0; b < kShape.batch; ++b) {
    const auto token = static_cast<std::size_t>(cd::initial_token(b));
    std::vector<float> row(v);
    for (std::size_t j = 0; j < v; ++j) {
      float acc = 0.0f;
      for (std::size_t i = 0; i < h; ++i) {
        acc += cd::fp16_to_float(w[j * h + i]) * cd::fp16_to_float(e[token * h + i]);
      }
      row[j] = acc;
    }
    out.logits.insert(out.logits.end(), row.begin(), row.end());
    float m = row[0];
    for (float x : row) m = std::max(m, x);
    std::vector<float> p(v);
    float sum = 0.0f;
    for (std::size_t j = 0; j < v; ++j) {
      p[j] = std::exp(row[j] - m);
      sum += p[j];
    }
    std::size_t best = 0;
    for (std::size_t j = 0; j < v; ++j) {
      p[j] /= sum;
      if (p[j] > p[best]) best = j;
    }
    out.tokens.push_back(static_cast<std::int32_t>(best));
  }
  return out;
}

TEST(DeterminismReference, FirstStepMatchesAPlainRecomputation) {
  auto model = make(GemmVariant::kFixed);
  ASSERT_TRUE(model->reset(7).has_value());
  const auto out = run_step(*model, 132);
  const auto expected = first_step(7);
  EXPECT_EQ(out.tokens, expected.tokens);
  EXPECT_EQ(checksum(out, cs::kDecodeLmHead),
            cd::checksum_of(std::span<const float>(expected.logits)));
  EXPECT_EQ(checksum(out, cs::kDecodeArgmax),
            cd::checksum_of(std::span<const std::int32_t>(expected.tokens)));
  ASSERT_EQ(out.kernel_checksums.size(), 4u);
  EXPECT_EQ(out.kernel_checksums[0].first, cs::kDecodeEmbed);
  EXPECT_EQ(out.kernel_checksums[3].first, cs::kDecodeArgmax);
}

TEST(DeterminismReference, SameSeedSameStepsAndTokensFeedTheNextStep) {
  auto a = make(GemmVariant::kFixed);
  auto b = make(GemmVariant::kFixed);
  ASSERT_TRUE(a->reset(3).has_value());
  ASSERT_TRUE(b->reset(3).has_value());
  const auto a1 = run_step(*a, 16);
  const auto b1 = run_step(*b, 16);
  EXPECT_EQ(a1.kernel_checksums, b1.kernel_checksums);
  const auto a2 = run_step(*a, 16);
  // Step 2 embeds step 1's tokens, not the initial ones.
  EXPECT_NE(checksum(a2, cs::kDecodeEmbed), checksum(a1, cs::kDecodeEmbed));
  ASSERT_TRUE(b->reset(4).has_value());
  EXPECT_NE(run_step(*b, 16).kernel_checksums, a1.kernel_checksums);
}

TEST(DeterminismReference, FixedIgnoresThePartitionDriftFollowsIt) {
  auto fixed = make(GemmVariant::kFixed);
  EXPECT_EQ(fixed->gemm_splits(16), 1);
  EXPECT_EQ(fixed->gemm_splits(132), 1);
  ASSERT_TRUE(fixed->reset(1).has_value());
  const auto f16 = run_step(*fixed, 16);
  ASSERT_TRUE(fixed->reset(1).has_value());
  const auto f132 = run_step(*fixed, 132);
  EXPECT_EQ(f16.kernel_checksums, f132.kernel_checksums);

  auto drift = make(GemmVariant::kDrift);
  EXPECT_EQ(drift->gemm_splits(8), 1);
  EXPECT_EQ(drift->gemm_splits(16), 1);
  EXPECT_EQ(drift->gemm_splits(64), 4);
  EXPECT_EQ(drift->gemm_splits(132), 8);
  ASSERT_TRUE(drift->reset(1).has_value());
  const auto d16 = run_step(*drift, 16);
  ASSERT_TRUE(drift->reset(1).has_value());
  const auto d132 = run_step(*drift, 132);
  // One split is the fixed order; eight partial sums round differently.
  EXPECT_EQ(d16.kernel_checksums, f16.kernel_checksums);
  EXPECT_EQ(checksum(d132, cs::kDecodeEmbed), checksum(d16, cs::kDecodeEmbed));
  EXPECT_NE(checksum(d132, cs::kDecodeLmHead), checksum(d16, cs::kDecodeLmHead));
}

TEST(DeterminismReference, KernelsRunInStepOrder) {
  auto model = make(GemmVariant::kFixed);
  EXPECT_FALSE(model->run_kernel(cs::kDecodeEmbed, {.partition_sms = 8}).has_value());
  ASSERT_TRUE(model->reset(1).has_value());
  const auto wrong = model->run_kernel(cs::kDecodeSoftmax, {.partition_sms = 8});
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().message().find("expects 'decode.embed'"), std::string::npos)
      << wrong.error().message();
  ASSERT_TRUE(model->run_kernel(cs::kDecodeEmbed, {.partition_sms = 8}).has_value());
  const auto early = model->finish_step();
  ASSERT_FALSE(early.has_value());
  EXPECT_NE(early.error().message().find("after 1 of the step's 4 kernels"), std::string::npos);
}

TEST(DeterminismReference, RejectsEmptyShapes) {
  EXPECT_FALSE(HostDecodeModel::create({.shape = {.batch = 0}}).has_value());
  EXPECT_FALSE(HostDecodeModel::create({.sms_per_split = 0}).has_value());
}

}  // namespace
}  // namespace tessera::experiment
