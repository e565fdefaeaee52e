#include "tessera/workload/models/tensor_parallel.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace tessera::workload {
namespace {

ModelConfig qwen14b() {
  auto m = find_model("qwen2.5-14b");
  EXPECT_TRUE(m.has_value());
  return m.value();
}

// Every kernel of a sequence with its group's repeat count, in launch order of one repeat.
struct Counted {
  const Kernel* kernel;
  int repeat;
};
std::vector<Counted> kernels_of(const KernelSequence& s) {
  std::vector<Counted> out;
  for (const auto& g : s.groups) {
    for (const auto& k : g.kernels) out.push_back({&k, g.repeat});
  }
  return out;
}

void expect_same(const KernelSequence& a, const KernelSequence& b) {
  const auto ka = kernels_of(a);
  const auto kb = kernels_of(b);
  ASSERT_EQ(ka.size(), kb.size());
  EXPECT_EQ(a.phase, b.phase);
  for (std::size_t i = 0; i < ka.size(); ++i) {
    SCOPED_TRACE(std::string(ka[i].kernel->name));
    EXPECT_EQ(ka[i].kernel->name, kb[i].kernel->name);
    EXPECT_EQ(ka[i].repeat, kb[i].repeat);
    EXPECT_EQ(ka[i].kernel->blocks, kb[i].kernel->blocks);
    EXPECT_EQ(ka[i].kernel->flops_per_block, kb[i].kernel->flops_per_block);
    EXPECT_EQ(ka[i].kernel->bytes_per_block, kb[i].kernel->bytes_per_block);
    EXPECT_EQ(ka[i].kernel->host_link_bytes_per_block, 0);
  }
}

double flops_of(const KernelSequence& s, std::string_view name) {
  double total = 0;
  for (const auto& [k, repeat] : kernels_of(s)) {
    if (k->name == name) total += k->total_flops() * repeat;
  }
  return total;
}

TEST(TensorParallel, DegreeOneIsTheUnshardedModel) {
  const ModelConfig m = qwen14b();
  TensorParallel tp;
  tp.penalty = 3.2;  // no collectives, so the placement cannot matter
  const std::vector<int> prompts{700, 1500};
  const std::vector<int> contexts{10, 2000, 4000};
  expect_same(tp_prefill_step(m, tp, prompts), prefill_step(m, prompts));
  expect_same(tp_decode_step(m, tp, contexts), decode_step(m, contexts));
}

TEST(TensorParallel, TwoAllReducesPerLayerPlusEmbeddingAndLogitsGather) {
  const ModelConfig m = qwen14b();
  const TensorParallel tp{.degree = 2, .link_bytes_per_s = 24e9, .penalty = 1.0};
  const std::vector<int> contexts(8, 1000);
  const KernelSequence s = tp_decode_step(m, tp, contexts);
  int all_reduces = 0;
  int gathers = 0;
  // One all-reduce moves 2(n-1)/n of tokens x hidden x 2 bytes per GPU: 8 x 5120 x 2 here.
  const double message = 8.0 * 5120 * 2;
  for (const auto& [k, repeat] : kernels_of(s)) {
    if (k->kind != KernelClass::kCommunication) {
      EXPECT_EQ(k->host_link_bytes_per_block, 0) << k->name;
      continue;
    }
    EXPECT_FALSE(k->block_independent) << k->name;
    EXPECT_DOUBLE_EQ(k->host_link_bytes_per_s, 24e9);
    if (k->name == std::string_view("logits_gather")) {
      gathers += repeat;
      // The second GPU's half of 8 x 152064 FP16 logits crosses to the first.
      EXPECT_DOUBLE_EQ(k->total_host_link_bytes(), 8.0 * 152064 * 2 / 2);
    } else {
      all_reduces += repeat;
      EXPECT_DOUBLE_EQ(k->total_host_link_bytes(), 2.0 * (2 - 1) / 2 * message) << k->name;
    }
  }
  EXPECT_EQ(all_reduces, 2 * m.layers + 1);
  EXPECT_EQ(gathers, 1);
}

TEST(TensorParallel, ShardsTheProjectionsAndTheLmHead) {
  const ModelConfig m = qwen14b();
  const TensorParallel tp{.degree = 2, .link_bytes_per_s = 24e9, .penalty = 1.0};
  const std::vector<int> prompts{512, 512};
  const KernelSequence full = prefill_step(m, prompts);
  const KernelSequence half = tp_prefill_step(m, tp, prompts);
  for (std::string_view gemm : {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head"}) {
    SCOPED_TRACE(std::string(gemm));
    // 2 m n k over half of n (column-parallel) or half of k (row-parallel); the QKV bias epilogue
    // is sharded with its columns.
    EXPECT_NEAR(flops_of(half, gemm), flops_of(full, gemm) / 2, flops_of(full, gemm) * 1e-9);
  }
  // Attention over half the heads; norms and sampling are not sharded.
  EXPECT_NEAR(flops_of(half, "flash_attention_prefill"),
              flops_of(full, "flash_attention_prefill") / 2, 1.0);
  EXPECT_DOUBLE_EQ(flops_of(half, "input_rmsnorm"), flops_of(full, "input_rmsnorm"));
  EXPECT_DOUBLE_EQ(flops_of(half, "sampling"), flops_of(full, "sampling"));
}

TEST(TensorParallel, RingAllReduceMovesTwoNMinusOneOverNPerGpu) {
  const TensorParallel tp4{.degree = 4, .link_bytes_per_s = 24e9, .penalty = 1.0};
  const Kernel k = all_reduce("ar", 1 << 20, 2, tp4);
  EXPECT_DOUBLE_EQ(k.total_host_link_bytes(), 2.0 * 3 / 4 * (1 << 20) * 2);
  EXPECT_EQ(k.kind, KernelClass::kCommunication);
  EXPECT_GT(k.total_bytes(), 0);
}

TEST(TensorParallel, PenaltySlowsTheLinkNothingElse) {
  const TensorParallel near{.degree = 2, .link_bytes_per_s = 24e9, .penalty = 1.0};
  TensorParallel far = near;
  far.penalty = 3.2;
  const Kernel a = all_reduce("ar", 4096 * 5120, 2, near);
  const Kernel b = all_reduce("ar", 4096 * 5120, 2, far);
  EXPECT_DOUBLE_EQ(b.host_link_bytes_per_s * 3.2, a.host_link_bytes_per_s);
  EXPECT_EQ(a.host_link_bytes_per_block, b.host_link_bytes_per_block);
  EXPECT_EQ(a.bytes_per_block, b.bytes_per_block);
  EXPECT_EQ(a.flops_per_block, b.flops_per_block);
}

TEST(TensorParallel, ValidateNamesWhatIsWrong) {
  const ModelConfig m = qwen14b();
  EXPECT_TRUE(validate(m, TensorParallel{}).has_value());
  EXPECT_TRUE(validate(m, TensorParallel{.degree = 2, .link_bytes_per_s = 24e9, .penalty = 1.2})
                  .has_value());

  auto bad = validate(m, TensorParallel{.degree = 0, .link_bytes_per_s = 24e9, .penalty = 1});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("degree"), std::string::npos);

  // 40 heads do not split over 3 GPUs.
  bad = validate(m, TensorParallel{.degree = 3, .link_bytes_per_s = 24e9, .penalty = 1});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("heads (40)"), std::string::npos);

  bad = validate(m, TensorParallel{.degree = 2, .link_bytes_per_s = 0, .penalty = 1});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("link rate"), std::string::npos);

  bad = validate(m, TensorParallel{.degree = 2, .link_bytes_per_s = 24e9, .penalty = NAN});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("penalty"), std::string::npos);
}

}  // namespace
}  // namespace tessera::workload
