// BERT-base and BERT-large pre-training iterations (Devlin et al. 2019, "BERT", Sec. 3: BASE
// L=12 layers, H=768, A=12 heads; LARGE L=24, H=1024, A=16; feed-forward 4H; WordPiece
// vocabulary of 30,522; 512 learned positions; two segment types), with the masked-LM and
// next-sentence heads of the pre-training task and an AdamW step. Attention is FlashAttention-2
// style (fused, dropout regenerated in-kernel).
//
// Kernels follow HuggingFace's BertForPreTraining module structure (a fused QKV projection as
// NVIDIA's implementation uses); every size comes from the shapes below. In TF32 or FP32
// training, attention cannot run FlashAttention (16-bit only): ASSUMPTION: PyTorch's
// memory-efficient attention takes its place with the same tiling and traffic, on the pipe the
// GEMMs use.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tessera/workload/kernels/gemm_shapes.hpp"
#include "tessera/workload/kernels/memory_bound.hpp"
#include "tessera/workload/kernels/optimizer.hpp"
#include "tessera/workload/models/internal/training_units.hpp"
#include "tessera/workload/models/training.hpp"

namespace tessera::workload {

namespace {

// Every BERT size has 64-dimensional heads (Devlin et al. 2019, Sec. 3: BASE H=768, A=12;
// LARGE H=1024, A=16), which the FlashAttention tiling below is for.
constexpr int kHeadDim = 64;

// Layers, hidden size, heads and feed-forward size (Devlin et al. 2019, Sec. 3: 4H).
struct BertSize {
  int layers;
  int hidden;
  int heads;
  int ffn;
};
constexpr BertSize kBase{.layers = 12, .hidden = 768, .heads = 12, .ffn = 3072};
constexpr BertSize kLarge{.layers = 24, .hidden = 1024, .heads = 16, .ffn = 4096};
static_assert(kBase.hidden / kBase.heads == kHeadDim && kLarge.hidden / kLarge.heads == kHeadDim);
constexpr int kVocab = 30522;
constexpr int kMaxPositions = 512;
constexpr int kSegmentTypes = 2;
constexpr int kNspClasses = 2;
constexpr double kStatBytes = 4;  // FP32 per-row statistics (LayerNorm, softmax logsumexp)
constexpr double kMaskBytes = 1;  // PyTorch's fused dropout keeps a bool mask

// Assumptions: arithmetic per value of memory-bound layers, counted from their formulas
// (LayerNorm: mean, variance, normalise, scale-shift; erf-based GELU; dropout's random draw,
// compare and scale; softmax cross-entropy's max, subtract, exp, sum, log).
constexpr double kLayerNormFwdFlops = 8;
constexpr double kLayerNormBwdFlops = 10;
constexpr double kGeluFwdFlops = 8;
constexpr double kGeluBwdFlops = 12;
constexpr double kDropoutFlops = 3;
constexpr double kSoftmaxXentFlops = 5;

// FlashAttention-2 tiling for head_dim 64 (Dao 2023; flash_fwd/bwd_launch_template.h):
// 128x128 tiles. Threads, shared memory and registers of the backward kernel are assumptions.
constexpr int kFlashTile = 128;
constexpr int kFlashFwdThreads = 128;
constexpr int kFlashBwdThreads = 256;
constexpr int kFlashRegisters = 255;
constexpr std::int64_t kFlashFwdSmem = (kFlashTile + 2 * kFlashTile) * kHeadDim * 2;
constexpr std::int64_t kFlashBwdSmem = 96 * 1024;
// FlashAttention-2's backward pass runs five matrix products to the forward's two (Dao 2023,
// Sec. 3.1.2): 2.5x the forward FLOPs.
constexpr double kFlashBwdFlopRatio = 2.5;
// Assumption: the LayerNorm gamma/beta gradient reduces columns in stripes of 32, one block per
// stripe over every row (the shape of PyTorch's GammaBetaBackward kernel for short rows).
constexpr std::int64_t kColumnStripe = 32;
constexpr int kColumnReduceThreads = 512;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

struct LinearNames {
  std::string_view fwd;
  std::string_view dgrad;
  std::string_view wgrad;
};

class Builder {
 public:
  // Activations, weights and gradients are stored in `precision`'s format, and the linear layers
  // and attention run on its pipe.
  Builder(const BertSize& size, int batch, int seq, Precision precision)
      : z_(size),
        batch_(batch),
        seq_(seq),
        tokens_(std::int64_t{batch} * seq),
        precision_(precision),
        elem_(element_bytes(precision)) {}

  std::int64_t tokens() const { return tokens_; }
  std::int64_t batch() const { return batch_; }

  // y = x W^T + b over `rows` rows. The bias gradient (a column sum of dY) rides in the
  // weight-gradient GEMM's epilogue (cuBLASLt's BGRAD epilogues do this).
  void linear(TrainingUnit& u, LinearNames names, std::int64_t rows, int in, int out,
              bool owns_weight = true) {
    const double r = static_cast<double>(rows);
    const double x_bytes = r * in * elem_;
    const double y_bytes = r * out * elem_;
    const double w_bytes = static_cast<double>(in) * out * elem_;
    const double b_bytes = out * elem_;
    const double bias_flops = r * out;
    u.forward.push_back(make_gemm({.name = names.fwd,
                                   .m = rows,
                                   .n = out,
                                   .k = in,
                                   .a_bytes = x_bytes,
                                   .b_bytes = w_bytes + b_bytes,
                                   .c_bytes = y_bytes,
                                   .epilogue_flops = bias_flops,
                                   .precision = precision_}));
    u.backward_by_op.push_back({make_gemm({.name = names.dgrad,
                                           .m = rows,
                                           .n = in,
                                           .k = out,
                                           .a_bytes = y_bytes,
                                           .b_bytes = w_bytes,
                                           .c_bytes = x_bytes,
                                           .precision = precision_}),
                                make_gemm({.name = names.wgrad,
                                           .m = out,
                                           .n = in,
                                           .k = rows,
                                           .a_bytes = y_bytes,
                                           .b_bytes = x_bytes,
                                           .c_bytes = w_bytes + b_bytes,
                                           .epilogue_flops = bias_flops,
                                           .precision = precision_})});
    u.parameters += (owns_weight ? static_cast<double>(in) * out : 0) + out;
  }

  void layernorm(TrainingUnit& u, std::int64_t rows) {
    const double v = static_cast<double>(rows) * z_.hidden;
    const double params = 2.0 * z_.hidden;
    u.forward.push_back(memory_bound(
        {.name = "layernorm_fwd",
         .kind = KernelClass::kNorm,
         .blocks = rows,
         .threads = row_threads(z_.hidden),
         .flops = kLayerNormFwdFlops * v,
         .bytes = (2 * v + params) * elem_ + 2 * static_cast<double>(rows) * kStatBytes}));
    // PyTorch launches two kernels: the input gradient per row, and gamma/beta gradients as
    // column sums over every row.
    u.backward_by_op.push_back({memory_bound({.name = "layernorm_bwd_input",
                                              .kind = KernelClass::kNorm,
                                              .blocks = rows,
                                              .threads = row_threads(z_.hidden),
                                              .flops = kLayerNormBwdFlops * v,
                                              .bytes = (3 * v + params) * elem_ +
                                                       2 * static_cast<double>(rows) * kStatBytes}),
                                memory_bound({.name = "layernorm_bwd_params",
                                              .kind = KernelClass::kReduction,
                                              .blocks = ceil_div(z_.hidden, kColumnStripe),
                                              .threads = kColumnReduceThreads,
                                              .flops = 3 * v,
                                              .bytes = (2 * v + params) * elem_})});
    u.parameters += params;
  }

  // Dropout on `values` outputs, optionally fused with the residual add that follows it.
  void dropout(TrainingUnit& u, double values, bool with_residual) {
    const auto blocks = elementwise_blocks(static_cast<std::int64_t>(values));
    const double inputs = with_residual ? 2 : 1;
    u.forward.push_back(
        memory_bound({.name = with_residual ? "dropout_add_fwd" : "dropout_fwd",
                      .blocks = blocks,
                      .flops = (kDropoutFlops + (with_residual ? 1 : 0)) * values,
                      .bytes = (inputs + 1) * values * elem_ + values * kMaskBytes}));
    // The residual input's gradient is dY itself: no kernel for that side.
    u.backward_by_op.push_back({memory_bound({.name = "dropout_bwd",
                                              .blocks = blocks,
                                              .flops = values,
                                              .bytes = 2 * values * elem_ + values * kMaskBytes})});
  }

  void activation(TrainingUnit& u, double values, std::string_view fwd_name,
                  std::string_view bwd_name, double fwd_flops, double bwd_flops) {
    const auto blocks = elementwise_blocks(static_cast<std::int64_t>(values));
    u.forward.push_back(memory_bound({.name = fwd_name,
                                      .blocks = blocks,
                                      .flops = fwd_flops * values,
                                      .bytes = 2 * values * elem_}));
    u.backward_by_op.push_back({memory_bound({.name = bwd_name,
                                              .blocks = blocks,
                                              .flops = bwd_flops * values,
                                              .bytes = 3 * values * elem_})});
  }

  // A tensor read by two consumers: in backward their gradients are summed here.
  void fork(TrainingUnit& u, double values) {
    u.backward_by_op.push_back(
        {memory_bound({.name = "residual_grad_add",
                       .blocks = elementwise_blocks(static_cast<std::int64_t>(values)),
                       .flops = values,
                       .bytes = 3 * values * elem_})});
  }

  void attention(TrainingUnit& u) {
    const double t = static_cast<double>(tokens_);
    const double pairs = static_cast<double>(batch_) * seq_ * seq_;  // no causal mask
    const double fwd_flops = 4 * pairs * kHeadDim * z_.heads;        // QK^T and PV
    const double act = t * z_.hidden * elem_;                        // one [tokens, H] tensor
    const double lse = t * z_.heads * kStatBytes;
    const std::int64_t blocks = ceil_div(seq_, kFlashTile) * z_.heads * batch_;
    u.forward.push_back(Kernel{
        .name = "flash_attention_fwd",
        .kind = KernelClass::kAttention,
        .pipe = gemm_pipe(precision_),
        .blocks = blocks,
        .block = {.threads = kFlashFwdThreads,
                  .registers_per_thread = kFlashRegisters,
                  .shared_memory_bytes = kFlashFwdSmem},
        .flops_per_block = fwd_flops / static_cast<double>(blocks),
        .bytes_per_block = (4 * act + lse) / static_cast<double>(blocks),  // Q, K, V in; O out
        .block_independent = true,  // one query tile of one head per block
    });
    const double dq_accum = t * z_.hidden * kStatBytes;  // FP32 dQ accumulator
    u.backward_by_op.push_back({
        memory_bound({.name = "flash_attention_bwd_dot_do_o",
                      .kind = KernelClass::kReduction,
                      .blocks = blocks,  // same (query tile, head, sequence) grid
                      .flops = 2 * t * z_.hidden,
                      .bytes = 2 * act + lse}),
        Kernel{
            .name = "flash_attention_bwd",
            .kind = KernelClass::kAttention,
            .pipe = gemm_pipe(precision_),
            .blocks = blocks,
            .block = {.threads = kFlashBwdThreads,
                      .registers_per_thread = kFlashRegisters,
                      .shared_memory_bytes = kFlashBwdSmem},
            .flops_per_block = kFlashBwdFlopRatio * fwd_flops / static_cast<double>(blocks),
            // Q, K, V, dO, logsumexp and dot(dO, O) in; dK, dV out; dQ accumulated in FP32
            // (the atomics resolve in L2: each value crosses DRAM about once each way).
            .bytes_per_block = (6 * act + 2 * lse + 2 * dq_accum) / static_cast<double>(blocks),
            // Blocks own key tiles and add into dQ with atomics: none waits for another.
            .block_independent = true,
        },
        memory_bound({.name = "flash_attention_bwd_convert_dq",
                      .blocks = elementwise_blocks(tokens_ * z_.hidden),
                      .flops = t * z_.hidden,
                      .bytes = dq_accum + act}),
    });
  }

  // Word, position and segment rows gathered and summed per token.
  void embeddings(TrainingUnit& u) {
    const double v = static_cast<double>(tokens_) * z_.hidden;
    u.forward.push_back(memory_bound({.name = "bert_embeddings_fwd",
                                      .kind = KernelClass::kEmbedding,
                                      .blocks = tokens_,
                                      .threads = row_threads(z_.hidden),
                                      .flops = 2 * v,
                                      .bytes = 4 * v * elem_}));  // three rows in, one out
    // Scatter-add of each token's gradient into the three tables (atomic adds, so blocks never
    // wait on one another): the gradient is read once, each table row read and written.
    u.backward_by_op.push_back({memory_bound({.name = "bert_embeddings_bwd",
                                              .kind = KernelClass::kEmbedding,
                                              .blocks = tokens_,
                                              .threads = row_threads(z_.hidden),
                                              .flops = 3 * v,
                                              .bytes = 7 * v * elem_})});
    u.parameters += static_cast<double>(kVocab + kMaxPositions + kSegmentTypes) * z_.hidden;
  }

  // Softmax cross-entropy over `classes` scores per row: log-softmax written, then the loss.
  void loss(TrainingUnit& u, std::string_view fwd, std::string_view bwd, std::int64_t rows,
            int classes) {
    const double v = static_cast<double>(rows) * classes;
    const MemoryBoundDesc f{.name = fwd,
                            .kind = KernelClass::kReduction,
                            .blocks = rows,
                            .threads = row_threads(classes),
                            .flops = kSoftmaxXentFlops * v,
                            .bytes = 2 * v * elem_};
    u.forward.push_back(memory_bound(f));
    MemoryBoundDesc b = f;
    b.name = bwd;
    b.kind = KernelClass::kElementwise;
    b.flops = 2 * v;
    u.backward_by_op.push_back({memory_bound(b)});
  }

 private:
  BertSize z_;
  std::int64_t batch_;
  std::int64_t seq_;
  std::int64_t tokens_;
  Precision precision_;
  double elem_;
};

TrainingIteration build(const BertSize& z, int batch, int seq_len, Precision precision) {
  Builder net(z, std::max(batch, 1), std::clamp(seq_len, 1, kMaxPositions), precision);
  const std::int64_t t = net.tokens();
  const double hidden_values = static_cast<double>(t) * z.hidden;
  std::vector<TrainingUnit> units;

  TrainingUnit embed;
  net.embeddings(embed);
  net.layernorm(embed, t);
  net.dropout(embed, hidden_values, /*with_residual=*/false);
  units.push_back(std::move(embed));

  TrainingUnit layer;
  layer.repeat = z.layers;
  net.fork(layer, hidden_values);  // layer input: attention and the residual path
  net.linear(layer, {"qkv_proj_fwd", "qkv_proj_dgrad", "qkv_proj_wgrad"}, t, z.hidden,
             3 * z.hidden);
  net.attention(layer);
  net.linear(layer, {"attn_out_proj_fwd", "attn_out_proj_dgrad", "attn_out_proj_wgrad"}, t,
             z.hidden, z.hidden);
  net.dropout(layer, hidden_values, /*with_residual=*/true);
  net.layernorm(layer, t);
  net.fork(layer, hidden_values);  // feed-forward input and its residual path
  net.linear(layer, {"ffn_in_fwd", "ffn_in_dgrad", "ffn_in_wgrad"}, t, z.hidden, z.ffn);
  net.activation(layer, static_cast<double>(t) * z.ffn, "gelu_fwd", "gelu_bwd", kGeluFwdFlops,
                 kGeluBwdFlops);
  net.linear(layer, {"ffn_out_fwd", "ffn_out_dgrad", "ffn_out_wgrad"}, t, z.ffn, z.hidden);
  net.dropout(layer, hidden_values, /*with_residual=*/true);
  net.layernorm(layer, t);
  units.push_back(std::move(layer));

  // Heads: the pooler and next-sentence classifier on each sequence's first token; the
  // masked-LM transform and decoder (weights tied to the word embeddings, own bias) on every
  // token, as HuggingFace computes prediction scores for all positions.
  TrainingUnit head;
  const std::int64_t b = net.batch();
  net.fork(head, hidden_values);
  net.linear(head, {"pooler_fwd", "pooler_dgrad", "pooler_wgrad"}, b, z.hidden, z.hidden);
  net.activation(head, static_cast<double>(b) * z.hidden, "tanh_fwd", "tanh_bwd", 1, 2);
  net.linear(head, {"nsp_classifier_fwd", "nsp_classifier_dgrad", "nsp_classifier_wgrad"}, b,
             z.hidden, kNspClasses);
  net.loss(head, "nsp_loss_fwd", "nsp_loss_bwd", b, kNspClasses);
  net.linear(head, {"mlm_transform_fwd", "mlm_transform_dgrad", "mlm_transform_wgrad"}, t, z.hidden,
             z.hidden);
  net.activation(head, hidden_values, "gelu_fwd", "gelu_bwd", kGeluFwdFlops, kGeluBwdFlops);
  net.layernorm(head, t);
  net.linear(head, {"mlm_decoder_fwd", "mlm_decoder_dgrad", "mlm_decoder_wgrad"}, t, z.hidden,
             kVocab, /*owns_weight=*/false);
  net.loss(head, "mlm_loss_fwd", "mlm_loss_bwd", t, kVocab);
  units.push_back(std::move(head));

  return assemble_iteration(units, adamw_step);
}

}  // namespace

KernelSequence bert_base_iteration(int batch, int seq_len, Precision precision) {
  return build(kBase, batch, seq_len, precision).sequence;
}

double bert_base_parameters() {
  return build(kBase, 1, 1, Precision::kBf16).parameters;
}

KernelSequence bert_large_iteration(int batch, int seq_len, Precision precision) {
  return build(kLarge, batch, seq_len, precision).sequence;
}

double bert_large_parameters() {
  return build(kLarge, 1, 1, Precision::kBf16).parameters;
}

}  // namespace tessera::workload
