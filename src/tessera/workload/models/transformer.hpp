#pragma once
// Decoder-only transformers turned into the kernels an inference engine (vLLM-like: fused QKV,
// fused gate/up, FlashAttention-style attention, paged decode attention, fused mixture-of-experts
// kernels) launches for one prefill batch or one decode step.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/kernels/precision.hpp"

namespace tessera::workload {

struct ModelConfig {
  std::string name;  // catalog key, e.g. "llama-3-8b"
  int layers;
  int hidden;    // model dimension
  int heads;     // query heads
  int kv_heads;  // key/value heads (grouped-query attention)
  int head_dim;
  int intermediate;  // MLP inner dimension
  int vocab;
  int bytes_per_param;           // 2 for BF16/FP16 weights
  int kv_bytes_per_elem;         // 2 for an FP16 KV cache
  bool qkv_bias = false;         // biases on the Q/K/V projections (Qwen2 has them)
  bool tied_embeddings = false;  // LM head shares the input embedding matrix
  // A mixture of experts (Mixtral): each layer's MLP is `experts` gated MLPs of `intermediate`,
  // and a router sends each token to `experts_per_token` of them. 0: one dense MLP.
  int experts = 0;
  int experts_per_token = 0;
  // The linear layers' format. BF16/FP16: every tensor at bytes_per_param. FP8: vLLM's W8A8
  // (FP8 weights, activations quantized per token just before each linear layer); the
  // embeddings, the LM head, the router and the KV cache stay at bytes_per_param, as vLLM
  // leaves them unquantized.
  Precision precision = Precision::kBf16;

  double parameters() const;    // total parameter count
  double weight_bytes() const;  // the linear layers' weights in `precision`, the rest at 16 bits
  double kv_bytes_per_token() const;  // K and V, all layers
  double embedding_bytes() const;     // the input embedding table alone

  // Rejects non-positive sizes and head counts that do not divide (heads % kv_heads), naming
  // the field, so a config typed into a scenario fails before any kernel is built.
  core::Status validate() const;
};

// Built-in model configs (sources cited in model_catalog.cpp).
const std::vector<ModelConfig>& model_catalog();
core::Result<ModelConfig> find_model(std::string_view name);

// Both builders expect a config that passes validate() (every catalog entry does). They return
// three groups: the embedding lookup, one decoder layer repeated `layers` times, and the final
// norm, LM head and sampling. No sequences give an empty KernelSequence.

// One prefill batch: prompts of the given lengths, processed together; produces each
// sequence's first token (LM head and sampling on the last position of each prompt). A length
// below 1 counts as 1: every prompt holds at least its start token.
KernelSequence prefill_step(const ModelConfig& m, std::span<const int> prompt_lengths);

// One decode step: every running sequence appends one token; context_lengths are the tokens
// already in each sequence's KV cache (a negative length counts as 0). Attention reads the
// cache plus the new token.
KernelSequence decode_step(const ModelConfig& m, std::span<const int> context_lengths);

}  // namespace tessera::workload
