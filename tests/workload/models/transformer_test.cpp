#include "tessera/workload/models/transformer.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::workload {
namespace {

ModelConfig llama() {
  return *find_model("llama-3-8b");
}
ModelConfig qwen() {
  return *find_model("qwen2-7b");
}

// Matrix parameters one token passes through in the decoder layers (no norms, no embeddings).
double layer_matmul_params(const ModelConfig& m) {
  const double q = static_cast<double>(m.heads) * m.head_dim;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim;
  return m.layers * (m.hidden * (q + 2 * kv) + q * m.hidden + 3.0 * m.hidden * m.intermediate);
}

const Kernel* find_kernel(const KernelSequence& s, std::string_view name) {
  for (const auto& g : s.groups) {
    for (const auto& k : g.kernels) {
      if (k.name == name) return &k;
    }
  }
  return nullptr;
}

TEST(DecodeStepTest, LaunchesTenKernelsPerLayer) {
  const ModelConfig m = llama();
  const std::vector<int> ctx = {100, 200, 300, 400};
  const KernelSequence s = decode_step(m, ctx);
  ASSERT_EQ(s.groups.size(), 3u);
  EXPECT_EQ(s.groups[1].repeat, m.layers);
  EXPECT_EQ(s.groups[1].kernels.size(), 10u);
  EXPECT_EQ(s.kernel_count(), 1 + 10 * m.layers + 3);
  ASSERT_NE(find_kernel(s, "paged_attention_v1"), nullptr);
  EXPECT_EQ(find_kernel(s, "paged_attention_v2"), nullptr);
}

TEST(DecodeStepTest, BytesAreTheWeightsPlusTheKvCache) {
  // Small batches are weight-bandwidth bound: a step streams every layer weight and the LM
  // head once (the embedding table is only gathered, one row per sequence) plus each
  // sequence's KV cache. Activations and split-K partial sums add well under 5% here.
  for (const ModelConfig& m : {llama(), qwen()}) {
    for (const std::vector<int>& ctx : {std::vector<int>{0}, std::vector<int>{1000},
                                        std::vector<int>{512, 2048, 4096, 100, 7, 3000, 1, 50}}) {
      const KernelSequence s = decode_step(m, ctx);
      const double attended = std::accumulate(ctx.begin(), ctx.end(), 0.0) + ctx.size();
      const double expected =
          m.weight_bytes() - m.embedding_bytes() + attended * m.kv_bytes_per_token();
      EXPECT_NEAR(s.total_bytes() / expected, 1.0, 0.05) << m.name << " seqs " << ctx.size();
      EXPECT_GE(s.total_bytes(), expected) << m.name;
    }
  }
}

TEST(DecodeStepTest, AttentionReadsTheWholeCacheOfEverySequence) {
  const ModelConfig m = llama();
  const std::vector<int> ctx = {100, 300};  // one 512-token partition: V1
  const KernelSequence s = decode_step(m, ctx);
  const Kernel* a = find_kernel(s, "paged_attention_v1");
  ASSERT_NE(a, nullptr);
  const double attended = 101 + 301;
  EXPECT_DOUBLE_EQ(a->total_flops(), 4.0 * attended * m.head_dim * m.heads);
  // Per layer: K and V of every attended token.
  const double kv = attended * 2 * m.kv_heads * m.head_dim * m.kv_bytes_per_elem;
  EXPECT_GT(a->total_bytes(), kv);
  EXPECT_LT(a->total_bytes(), kv * 1.05);
  EXPECT_EQ(a->blocks, 2 * m.heads);
  EXPECT_EQ(a->kind, KernelClass::kAttention);
  EXPECT_EQ(a->pipe, ComputePipe::kFp32);  // PagedAttention uses CUDA-core FMAs
}

TEST(DecodeStepTest, LongContextsUsePartitionedAttentionWithAReduce) {
  const ModelConfig m = llama();
  // vLLM picks V2 beyond 8192 tokens, and for short batches of multi-partition contexts.
  for (const std::vector<int>& ctx : {std::vector<int>{20000}, std::vector<int>{2000}}) {
    const KernelSequence s = decode_step(m, ctx);
    const Kernel* v2 = find_kernel(s, "paged_attention_v2");
    ASSERT_NE(v2, nullptr) << ctx[0];
    ASSERT_NE(find_kernel(s, "paged_attention_v2_reduce"), nullptr);
    EXPECT_EQ(s.groups[1].kernels.size(), 11u);
    const std::int64_t partitions = (ctx[0] + 1 + 511) / 512;
    EXPECT_EQ(v2->blocks, m.heads * partitions);
    EXPECT_DOUBLE_EQ(v2->total_flops(), 4.0 * (ctx[0] + 1) * m.head_dim * m.heads);
  }
  // Many sequences give enough (head, sequence) blocks: V1 again.
  const std::vector<int> many(32, 2000);
  const KernelSequence batched = decode_step(m, many);
  EXPECT_NE(find_kernel(batched, "paged_attention_v1"), nullptr);
}

TEST(DecodeStepTest, SamplingAndSplitKGemmsAreNotBlockIndependent) {
  const KernelSequence s = decode_step(llama(), std::vector<int>{10});
  const Kernel* sampling = find_kernel(s, "sampling");
  ASSERT_NE(sampling, nullptr);
  EXPECT_FALSE(sampling->block_independent);
  EXPECT_EQ(sampling->kind, KernelClass::kSampling);
  const Kernel* o = find_kernel(s, "o_proj");  // 4096 x 4096 at M=1: split-K
  ASSERT_NE(o, nullptr);
  EXPECT_FALSE(o->block_independent);
  EXPECT_GE(o->blocks, 256);
  const Kernel* norm = find_kernel(s, "input_rmsnorm");
  ASSERT_NE(norm, nullptr);
  EXPECT_TRUE(norm->block_independent);
  EXPECT_EQ(norm->pipe, ComputePipe::kFp32);
  EXPECT_TRUE(find_kernel(s, "paged_attention_v1")->block_independent);
}

TEST(PrefillStepTest, FlopsAreTwoParamsPerTokenPlusAttention) {
  for (const ModelConfig& m : {llama(), qwen()}) {
    const std::vector<int> prompts = {512, 1024, 2048, 17};
    const KernelSequence s = prefill_step(m, prompts);
    double tokens = 0;
    double causal_pairs = 0;
    for (int l : prompts) {
      tokens += l;
      causal_pairs += l * (l + 1.0) / 2;
    }
    const double gemm = 2 * tokens * layer_matmul_params(m) +
                        2.0 * prompts.size() * m.hidden * m.vocab;  // LM head: last positions
    const double attention = m.layers * 4 * causal_pairs * m.heads * m.head_dim;
    // Norms, activations, biases and sampling add a fraction of a percent.
    EXPECT_NEAR(s.total_flops() / (gemm + attention), 1.0, 0.01) << m.name;
    EXPECT_GE(s.total_flops(), gemm + attention);
    EXPECT_EQ(s.groups[1].kernels.size(), 10u);
  }
}

TEST(PrefillStepTest, FlashAttentionBlocksCoverEveryQueryTile) {
  const ModelConfig m = llama();
  const std::vector<int> prompts = {100, 128, 129, 1000};
  const KernelSequence s = prefill_step(m, prompts);
  const Kernel* a = find_kernel(s, "flash_attention_prefill");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->blocks, (1 + 1 + 2 + 8) * m.heads);
  EXPECT_TRUE(a->block_independent);
  EXPECT_EQ(a->pipe, ComputePipe::kTensorFp16);
}

TEST(PrefillStepTest, GemmsHaveTheLayerShapes) {
  const ModelConfig m = llama();
  const std::vector<int> prompts = {300, 700};
  const KernelSequence s = prefill_step(m, prompts);
  const double t = 1000;
  EXPECT_DOUBLE_EQ(find_kernel(s, "qkv_proj")->total_flops(), 2 * t * 6144 * 4096);
  EXPECT_DOUBLE_EQ(find_kernel(s, "o_proj")->total_flops(), 2 * t * 4096 * 4096);
  EXPECT_DOUBLE_EQ(find_kernel(s, "gate_up_proj")->total_flops(), 2 * t * 28672 * 4096);
  EXPECT_DOUBLE_EQ(find_kernel(s, "down_proj")->total_flops(), 2 * t * 4096 * 14336);
  EXPECT_DOUBLE_EQ(find_kernel(s, "lm_head")->total_flops(), 2 * 2.0 * 128256 * 4096);
  // Qwen2's QKV bias adds one FLOP per output.
  const ModelConfig q = qwen();
  const KernelSequence qs = prefill_step(q, prompts);
  const Kernel* qkv = find_kernel(qs, "qkv_proj");
  EXPECT_DOUBLE_EQ(qkv->total_flops(), 2 * t * 4608 * 3584 + t * 4608);
}

TEST(PrefillStepTest, ShortLengthsCountAsOneToken) {
  const ModelConfig m = llama();
  const std::vector<int> zero = {0};
  const std::vector<int> one = {1};
  EXPECT_DOUBLE_EQ(prefill_step(m, zero).total_flops(), prefill_step(m, one).total_flops());
  const std::vector<int> negative = {-3};
  const std::vector<int> none = {0};
  EXPECT_DOUBLE_EQ(decode_step(m, negative).total_bytes(), decode_step(m, none).total_bytes());
}

TEST(StepTest, NoSequencesGiveAnEmptySequence) {
  EXPECT_EQ(prefill_step(llama(), {}).kernel_count(), 0);
  EXPECT_EQ(decode_step(llama(), {}).kernel_count(), 0);
}

TEST(StepTest, SameInputsGiveIdenticalKernels) {
  const std::vector<int> ctx = {5, 900, 12000};
  const KernelSequence a = decode_step(qwen(), ctx);
  const KernelSequence b = decode_step(qwen(), ctx);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    ASSERT_EQ(a.groups[g].kernels.size(), b.groups[g].kernels.size());
    for (std::size_t i = 0; i < a.groups[g].kernels.size(); ++i) {
      const Kernel& x = a.groups[g].kernels[i];
      const Kernel& y = b.groups[g].kernels[i];
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(x.blocks, y.blocks);
      EXPECT_EQ(x.flops_per_block, y.flops_per_block);
      EXPECT_EQ(x.bytes_per_block, y.bytes_per_block);
    }
  }
}

TEST(StepTest, DecodeCostGrowsWithBatchAndContext) {
  const ModelConfig m = llama();
  const double one = decode_step(m, std::vector<int>{1000}).total_bytes();
  const double longer = decode_step(m, std::vector<int>{8000}).total_bytes();
  EXPECT_NEAR(longer - one, 7000 * m.kv_bytes_per_token(), 0.01 * 7000 * m.kv_bytes_per_token());
  const double f1 = decode_step(m, std::vector<int>(1, 100)).total_flops();
  const double f64 = decode_step(m, std::vector<int>(64, 100)).total_flops();
  EXPECT_NEAR(f64 / f1, 64, 0.5);  // FLOPs are per token; weights are shared
}

}  // namespace
}  // namespace tessera::workload
