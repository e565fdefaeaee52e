// The kernels a vLLM-like engine launches for one prefill batch or one decode step of a
// decoder-only transformer. Each decoder layer launches, in order: input RMSNorm, fused QKV
// GEMM, rotary embedding, attention, output projection, fused residual-add + RMSNorm, the MLP,
// residual add. A dense MLP is a fused gate/up GEMM, SiLU-and-multiply and the down GEMM; a
// mixture of experts is vLLM's fused MoE (vllm/model_executor/layers/fused_moe): the router
// GEMM, top-k softmax, the alignment of tokens to experts, a grouped gate/up GEMM over the
// experts, SiLU-and-multiply, a grouped down GEMM and the sum of each token's experts. Layers
// are identical, so they form one KernelGroup repeated `layers` times.

#include "tessera/workload/models/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tessera/workload/kernels/gemm_shapes.hpp"
#include "tessera/workload/kernels/memory_bound.hpp"

namespace tessera::workload {

namespace {

// Assumptions about elementwise arithmetic (not measured): an RMSNorm costs ~4 FLOPs per value
// (square, accumulate, scale by rsqrt, scale by weight); a rotary rotation 3 per value (two
// multiplies and an add per output); SiLU-and-multiply 5 per output (exp, add, divide, two
// multiplies); sampling 10 per logit (softmax's max/subtract/exp/sum/divide plus the
// exponential-race draw, divide and argmax compare vLLM's sampler uses).
constexpr double kNormFlopsPerValue = 4;
constexpr double kRotaryFlopsPerValue = 3;
constexpr double kSiluMulFlopsPerValue = 5;
constexpr double kSamplingFlopsPerLogit = 10;
// vLLM's rotary kernel: one block per token of min(heads * rot_dim / 2, 512) threads
// (csrc/pos_encoding_kernels.cu).
constexpr int kRotaryMaxThreads = 512;

// FlashAttention-2 forward tiling for head_dim 128 on SM80: 128 query rows per block, 64 keys
// per step, 4 warps (Dao 2023, "FlashAttention-2", Sec. 3.3; flash_fwd_launch_template.h).
// Register count is an assumption: these kernels use nearly the 255-register maximum.
constexpr int kFlashBlockM = 128;
constexpr int kFlashBlockN = 64;
constexpr int kFlashThreads = 128;
constexpr int kFlashRegisters = 255;

// vLLM PagedAttention (csrc/attention/attention_kernels.cuh, paged_attention_v1.cu/_v2.cu):
// 128 threads per block, KV pages of 16 tokens, V2 splits the context into 512-token
// partitions and adds a reduce kernel. Register count is an assumption.
constexpr int kPagedThreads = 128;
constexpr int kPagedWarps = kPagedThreads / 32;
constexpr int kPagedRegisters = 64;
constexpr std::int64_t kKvPageTokens = 16;
constexpr std::int64_t kPartitionTokens = 512;
// vllm/attention/ops/paged_attn.py: V1 when max_seq_len <= 8192 and (one partition or
// num_seqs * num_heads > 512).
constexpr std::int64_t kV1MaxContext = 8192;
constexpr std::int64_t kV1MinParallelism = 512;

// Assumption: a long row of logits is reduced by several blocks (PyTorch's reduce kernel
// splits rows this long across blocks and combines them through a global semaphore).
constexpr std::int64_t kSamplingLogitsPerBlock = 16384;
constexpr int kSamplingThreads = 512;
constexpr double kLogitBytes = 4;    // vLLM upcasts logits to FP32 before sampling
constexpr double kTokenIdBytes = 8;  // int64 token ids

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Per-batch sizes shared by prefill and decode.
struct Shape {
  const ModelConfig& m;
  double tokens;  // rows through every per-token kernel
  std::int64_t token_rows;
  double seqs;
  std::int64_t seq_rows;
  double e;  // activation and weight element size

  double q_dim() const { return static_cast<double>(m.heads) * m.head_dim; }
  double kv_dim() const { return static_cast<double>(m.kv_heads) * m.head_dim; }
};

Kernel embedding(const Shape& s) {
  return memory_bound({.name = "embedding",
                       .kind = KernelClass::kEmbedding,
                       .blocks = s.token_rows,
                       .threads = row_threads(s.m.hidden),
                       .bytes = 2 * s.tokens * s.m.hidden * s.e});  // gather a row, write it
}

Kernel rmsnorm(const Shape& s, std::string_view name) {
  const double h = s.m.hidden;
  return memory_bound({.name = name,
                       .kind = KernelClass::kNorm,
                       .blocks = s.token_rows,
                       .threads = row_threads(s.m.hidden),
                       .flops = kNormFlopsPerValue * s.tokens * h,
                       .bytes = (2 * s.tokens * h + h) * s.e});  // in, out, weight
}

Kernel add_rmsnorm(const Shape& s) {
  const double h = s.m.hidden;
  return memory_bound({.name = "post_attention_add_rmsnorm",
                       .kind = KernelClass::kNorm,
                       .blocks = s.token_rows,
                       .threads = row_threads(s.m.hidden),
                       .flops = (1 + kNormFlopsPerValue) * s.tokens * h,
                       // reads x and residual, writes residual and normalised x, reads weight
                       .bytes = (4 * s.tokens * h + h) * s.e});
}

// A linear layer: its GEMM `g` (built at 16 bits) in the model's format. In FP8 a quantization
// kernel first reads the 16-bit activations and writes them in FP8 with one FP32 scale per token
// (vLLM's dynamic per-token scaled_fp8_quant; 3 FLOPs a value: absolute maximum, scale,
// convert), and the GEMM reads FP8 activations and weights and writes 16 bits.
void linear(const Shape& s, GemmDesc g, std::vector<Kernel>& out) {
  if (s.m.precision == Precision::kFp8) {
    const double values = static_cast<double>(g.m) * static_cast<double>(g.k);
    const double fp8 = element_bytes(Precision::kFp8);
    out.push_back(memory_bound({.name = "fp8_quant",
                                .kind = KernelClass::kElementwise,
                                .blocks = g.m,
                                .threads = row_threads(g.k),
                                .flops = 3 * values,
                                .bytes = values * (s.e + fp8) + static_cast<double>(g.m) * 4}));
    g.a_bytes = g.a_bytes / s.e * fp8;
    g.b_bytes = g.b_bytes / s.e * fp8;
    g.precision = Precision::kFp8;
  }
  out.push_back(make_gemm(g));
}

GemmDesc qkv_projection(const Shape& s) {
  const auto n = static_cast<std::int64_t>(s.q_dim() + 2 * s.kv_dim());
  GemmDesc g = dense_gemm("qkv_proj", s.token_rows, n, s.m.hidden, s.m.bytes_per_param);
  if (s.m.qkv_bias) {
    g.b_bytes += static_cast<double>(n) * s.e;
    g.epilogue_flops = s.tokens * static_cast<double>(n);
  }
  return g;
}

Kernel rotary(const Shape& s) {
  const double rotated = s.q_dim() + s.kv_dim();  // every query and key value
  const int threads = std::min(
      kRotaryMaxThreads, row_threads(static_cast<std::int64_t>(s.m.heads) * s.m.head_dim / 2));
  return memory_bound({.name = "rotary_embedding",
                       .kind = KernelClass::kElementwise,
                       .blocks = s.token_rows,
                       .threads = threads,
                       .flops = kRotaryFlopsPerValue * s.tokens * rotated,
                       // q and k in place (read + write) and one cos/sin row per token
                       .bytes = (2 * rotated + s.m.head_dim) * s.tokens * s.e});
}

// Writing this step's K and V into the paged cache (vLLM's reshape_and_cache, a small separate
// launch) is counted in the attention kernel's traffic rather than as an extra kernel, as
// flash_attn_with_kvcache does when it appends new keys itself.
double kv_append_bytes(const Shape& s) {
  return s.tokens * 2 * s.kv_dim() * s.m.kv_bytes_per_elem;
}

Kernel prefill_attention(const Shape& s, std::span<const int> lengths) {
  double causal_pairs = 0;  // query-key pairs under the causal mask
  std::int64_t query_tiles = 0;
  for (int raw : lengths) {
    const double len = std::max(raw, 1);
    causal_pairs += len * (len + 1) / 2;
    query_tiles += ceil_div(std::max(raw, 1), kFlashBlockM);
  }
  const double hd = s.m.head_dim;
  // QK^T and PV: 2 FLOPs per multiply-add each, per pair, per head, per head dimension.
  const double flops = 4 * causal_pairs * hd * s.m.heads;
  const double bytes =
      (2 * s.q_dim() + 2 * s.kv_dim()) * s.tokens * s.e + kv_append_bytes(s);  // Q, O, K, V
  // Blocks of prompts shorter than the longest exit at once; only those with work are counted.
  const std::int64_t blocks = query_tiles * s.m.heads;
  return Kernel{
      .name = "flash_attention_prefill",
      .kind = KernelClass::kAttention,
      .pipe = ComputePipe::kTensorFp16,
      .blocks = blocks,
      .block = {.threads = kFlashThreads,
                .registers_per_thread = kFlashRegisters,
                .shared_memory_bytes =
                    static_cast<std::int64_t>((kFlashBlockM + 2 * kFlashBlockN) * hd * s.e)},
      .flops_per_block = flops / static_cast<double>(blocks),
      .bytes_per_block = bytes / static_cast<double>(blocks),
      .block_independent = true,  // each block owns one query tile of one head
  };
}

// Decode attention: one query per sequence against its whole KV cache (vLLM PagedAttention).
void decode_attention(const Shape& s, std::span<const int> contexts, std::vector<Kernel>& out) {
  double attended = 0;  // cached tokens plus the new one, summed over sequences
  std::int64_t max_ctx = 1;
  for (int raw : contexts) {
    const std::int64_t ctx = std::max(raw, 0) + 1;
    attended += static_cast<double>(ctx);
    max_ctx = std::max(max_ctx, ctx);
  }
  const double hd = s.m.head_dim;
  const double flops = 4 * attended * hd * s.m.heads;
  const double kv_read = attended * 2 * s.kv_dim() * s.m.kv_bytes_per_elem;
  const double q_and_out = 2 * s.seqs * s.q_dim() * s.e;
  const std::int64_t head_rows = s.seq_rows * s.m.heads;
  const std::int64_t partitions = ceil_div(max_ctx, kPartitionTokens);
  const bool v1 = max_ctx <= kV1MaxContext && (partitions == 1 || head_rows > kV1MinParallelism);
  const auto fp32 = static_cast<std::int64_t>(sizeof(float));
  const std::int64_t reduce_smem = (kPagedWarps / 2) * s.m.head_dim * fp32;

  if (v1) {
    // One block per (head, sequence); shared memory holds the logits of the longest context.
    const std::int64_t logits_smem = ceil_div(max_ctx, kKvPageTokens) * kKvPageTokens * fp32;
    const double bytes = kv_read + q_and_out + kv_append_bytes(s);
    out.push_back(Kernel{
        .name = "paged_attention_v1",
        .kind = KernelClass::kAttention,
        .pipe = ComputePipe::kFp32,  // PagedAttention's dot products are FP32 FMAs, not MMA
        .blocks = head_rows,
        .block = {.threads = kPagedThreads,
                  .registers_per_thread = kPagedRegisters,
                  .shared_memory_bytes = std::max(logits_smem, reduce_smem)},
        .flops_per_block = flops / static_cast<double>(head_rows),
        .bytes_per_block = bytes / static_cast<double>(head_rows),
        .block_independent = true,  // each block owns one head of one sequence
    });
    return;
  }
  // V2: (head, sequence, partition) blocks write partial outputs with their max logit and
  // exp-sum; a reduce kernel combines the partitions. Partitions past a short sequence's end
  // exit at once but are part of the launch.
  const double partial_bytes =
      static_cast<double>(head_rows * partitions) * (hd * s.e + 2 * static_cast<double>(fp32));
  const std::int64_t blocks = head_rows * partitions;
  const double bytes = kv_read + s.seqs * s.q_dim() * s.e + partial_bytes + kv_append_bytes(s);
  out.push_back(Kernel{
      .name = "paged_attention_v2",
      .kind = KernelClass::kAttention,
      .pipe = ComputePipe::kFp32,  // as V1
      .blocks = blocks,
      .block = {.threads = kPagedThreads,
                .registers_per_thread = kPagedRegisters,
                .shared_memory_bytes = std::max(kPartitionTokens * fp32, reduce_smem)},
      .flops_per_block = flops / static_cast<double>(blocks),
      .bytes_per_block = bytes / static_cast<double>(blocks),
      // Partitions write separate partial results; the combine is a separate launch.
      .block_independent = true,
  });
  out.push_back(memory_bound({.name = "paged_attention_v2_reduce",
                              .kind = KernelClass::kReduction,
                              .blocks = head_rows,
                              .threads = kPagedThreads,
                              // rescale by exp(max difference) and accumulate, per value
                              .flops = 4 * static_cast<double>(blocks) * hd,
                              .bytes = partial_bytes + s.seqs * s.q_dim() * s.e,  // + output
                              .shared_memory_bytes = 2 * partitions * fp32}));
}

Kernel silu_and_mul(const Shape& s) {
  const double i = s.m.intermediate;
  return memory_bound({.name = "silu_and_mul",
                       .kind = KernelClass::kElementwise,
                       .blocks = s.token_rows,
                       .threads = row_threads(s.m.intermediate),
                       .flops = kSiluMulFlopsPerValue * s.tokens * i,
                       .bytes = 3 * s.tokens * i * s.e});  // gate and up in, product out
}

// The fused MoE launches. ASSUMPTION: routing is uniform, so of E experts with k per token, T
// tokens reach E (1 - (1 - k / E)^T) of them on average (each expert is skipped by a token with
// probability 1 - k / E), and the T k token rows divide evenly among those: each reached expert's
// weights cross DRAM once, each token row once per expert it is routed to.
void moe_mlp(const Shape& s, std::vector<Kernel>& out) {
  const double t = s.tokens;
  const double e = static_cast<double>(s.m.experts);
  const double k = static_cast<double>(s.m.experts_per_token);
  const double h = s.m.hidden;
  const double i = s.m.intermediate;
  const double rows = t * k;
  const auto reached = static_cast<std::int64_t>(
      std::clamp(std::ceil(e * (1 - std::pow(1 - k / e, t)) - 1e-9), std::min(k, e), e));
  const auto rows_per_expert = static_cast<std::int64_t>(std::ceil(rows / reached));
  out.push_back(make_gemm(
      dense_gemm("moe_router", s.token_rows, s.m.experts, s.m.hidden, s.m.bytes_per_param)));
  out.push_back(memory_bound({.name = "moe_topk_softmax",
                              .kind = KernelClass::kReduction,
                              .blocks = elementwise_blocks(s.token_rows * s.m.experts),
                              .flops = 5 * t * e,  // softmax's max, subtract, exp, sum, divide
                              // FP32 logits in; expert ids and weights (4 bytes each) out
                              .bytes = t * e * 4 + rows * 8}));
  out.push_back(memory_bound({.name = "moe_align_block_size",
                              .kind = KernelClass::kOther,
                              .blocks = 1,
                              .bytes = rows * 4 * 2,  // expert ids in, sorted token ids out
                              .block_independent = false}));
  GemmDesc gate_up{.name = "moe_gate_up",
                   .kind = KernelClass::kGemm,
                   .m = rows_per_expert,
                   .n = 2 * static_cast<std::int64_t>(s.m.intermediate),
                   .k = s.m.hidden,
                   .a_bytes = rows * h * s.e,
                   .b_bytes = static_cast<double>(reached) * 2 * i * h * s.e,
                   .c_bytes = rows * 2 * i * s.e,
                   .groups = reached};
  linear(s, gate_up, out);
  out.push_back(memory_bound({.name = "silu_and_mul",
                              .kind = KernelClass::kElementwise,
                              .blocks = static_cast<std::int64_t>(rows),
                              .threads = row_threads(s.m.intermediate),
                              .flops = kSiluMulFlopsPerValue * rows * i,
                              .bytes = 3 * rows * i * s.e}));
  GemmDesc down{.name = "moe_down",
                .kind = KernelClass::kGemm,
                .m = rows_per_expert,
                .n = s.m.hidden,
                .k = s.m.intermediate,
                .a_bytes = rows * i * s.e,
                .b_bytes = static_cast<double>(reached) * h * i * s.e,
                .c_bytes = rows * h * s.e,
                .groups = reached};
  linear(s, down, out);
  out.push_back(memory_bound({.name = "moe_sum",
                              .kind = KernelClass::kElementwise,
                              .blocks = elementwise_blocks(s.token_rows * s.m.hidden),
                              .flops = rows * h,
                              .bytes = (rows + t) * h * s.e}));
}

void dense_mlp(const Shape& s, std::vector<Kernel>& out) {
  linear(s,
         dense_gemm("gate_up_proj", s.token_rows, 2 * static_cast<std::int64_t>(s.m.intermediate),
                    s.m.hidden, s.m.bytes_per_param),
         out);
  out.push_back(silu_and_mul(s));
  linear(s,
         dense_gemm("down_proj", s.token_rows, s.m.hidden, s.m.intermediate, s.m.bytes_per_param),
         out);
}

Kernel residual_add(const Shape& s) {
  const double values = s.tokens * s.m.hidden;
  return memory_bound({.name = "residual_add",
                       .kind = KernelClass::kPointwise,
                       .blocks = elementwise_blocks(static_cast<std::int64_t>(values)),
                       .flops = values,
                       .bytes = 3 * values * s.e});
}

Kernel sampling(const Shape& s) {
  const double logits = s.seqs * s.m.vocab;
  return memory_bound({.name = "sampling",
                       .kind = KernelClass::kSampling,
                       .blocks = s.seq_rows * ceil_div(s.m.vocab, kSamplingLogitsPerBlock),
                       .threads = kSamplingThreads,
                       .flops = kSamplingFlopsPerLogit * logits,
                       // softmax pass and sampling pass over FP32 logits, one token id out
                       .bytes = 2 * logits * kLogitBytes + s.seqs * kTokenIdBytes,
                       // Blocks sharing a row combine partial max/sum results, so they cannot
                       // be split into independently runnable ranges.
                       .block_independent = false});
}

template <typename Attention>
KernelSequence build(const Shape& s, Attention&& attention) {
  KernelSequence seq;
  seq.groups.push_back({.kernels = {embedding(s)}, .repeat = 1});

  KernelGroup layer{.kernels = {}, .repeat = s.m.layers};
  layer.kernels.push_back(rmsnorm(s, "input_rmsnorm"));
  linear(s, qkv_projection(s), layer.kernels);
  layer.kernels.push_back(rotary(s));
  attention(layer.kernels);
  linear(s,
         dense_gemm("o_proj", s.token_rows, s.m.hidden, static_cast<std::int64_t>(s.q_dim()),
                    s.m.bytes_per_param),
         layer.kernels);
  layer.kernels.push_back(add_rmsnorm(s));
  if (s.m.experts > 0) {
    moe_mlp(s, layer.kernels);
  } else {
    dense_mlp(s, layer.kernels);
  }
  layer.kernels.push_back(residual_add(s));
  seq.groups.push_back(std::move(layer));

  // vLLM computes logits only for each sequence's last position.
  KernelGroup head{.kernels = {}, .repeat = 1};
  head.kernels.push_back(rmsnorm(s, "final_rmsnorm"));
  head.kernels.push_back(
      make_gemm(dense_gemm("lm_head", s.seq_rows, s.m.vocab, s.m.hidden, s.m.bytes_per_param)));
  head.kernels.push_back(sampling(s));
  seq.groups.push_back(std::move(head));
  return seq;
}

}  // namespace

KernelSequence prefill_step(const ModelConfig& m, std::span<const int> prompt_lengths) {
  if (prompt_lengths.empty()) return {};
  std::int64_t tokens = 0;
  for (int len : prompt_lengths) tokens += std::max(len, 1);
  const auto seqs = static_cast<std::int64_t>(prompt_lengths.size());
  const Shape s{.m = m,
                .tokens = static_cast<double>(tokens),
                .token_rows = tokens,
                .seqs = static_cast<double>(seqs),
                .seq_rows = seqs,
                .e = static_cast<double>(m.bytes_per_param)};
  auto seq = build(
      s, [&](std::vector<Kernel>& out) { out.push_back(prefill_attention(s, prompt_lengths)); });
  seq.phase = Phase::kPrefill;
  return seq;
}

KernelSequence decode_step(const ModelConfig& m, std::span<const int> context_lengths) {
  if (context_lengths.empty()) return {};
  const auto seqs = static_cast<std::int64_t>(context_lengths.size());
  const Shape s{.m = m,
                .tokens = static_cast<double>(seqs),
                .token_rows = seqs,
                .seqs = static_cast<double>(seqs),
                .seq_rows = seqs,
                .e = static_cast<double>(m.bytes_per_param)};
  auto seq = build(s, [&](std::vector<Kernel>& out) { decode_attention(s, context_lengths, out); });
  seq.phase = Phase::kDecode;
  return seq;
}

}  // namespace tessera::workload
