#pragma once
// Decoder-only transformers turned into the kernels an inference engine (vLLM-like: fused QKV,
// fused gate/up, FlashAttention-style attention, paged decode attention) launches for one
// prefill batch or one decode step.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernel.hpp"

namespace tessera::workload {

struct ModelConfig {
  std::string name;        // catalog key, e.g. "llama-3-8b"
  int layers;
  int hidden;              // model dimension
  int heads;               // query heads
  int kv_heads;            // key/value heads (grouped-query attention)
  int head_dim;
  int intermediate;        // MLP inner dimension
  int vocab;
  int bytes_per_param;     // 2 for BF16/FP16 weights
  int kv_bytes_per_elem;   // 2 for an FP16 KV cache

  double parameters() const;                 // total parameter count
  double weight_bytes() const;
  double kv_bytes_per_token() const;         // K and V, all layers
};

// Built-in model configs (sources cited in model_catalog.cpp).
const std::vector<ModelConfig>& model_catalog();
core::Result<ModelConfig> find_model(std::string_view name);

// One prefill batch: prompts of the given lengths, processed together; produces each
// sequence's first token (LM head and sampling on the last position of each prompt).
KernelSequence prefill_step(const ModelConfig& m, std::span<const int> prompt_lengths);

// One decode step: every running sequence appends one token; context_lengths are the tokens
// already in each sequence's KV cache.
KernelSequence decode_step(const ModelConfig& m, std::span<const int> context_lengths);

}  // namespace tessera::workload
