// Built-in decoder configs and the sizes derived from them.

#include <algorithm>
#include <cctype>
#include <string>

#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {

namespace {

std::vector<ModelConfig> build_catalog() {
  return {
      // Source: Hugging Face meta-llama/Meta-Llama-3-8B, config.json: num_hidden_layers 32,
      // hidden_size 4096, num_attention_heads 32, num_key_value_heads 8, head_dim
      // hidden_size/num_attention_heads = 128, intermediate_size 14336, vocab_size 128256,
      // torch_dtype bfloat16, tie_word_embeddings false; no attention bias.
      ModelConfig{.name = "llama-3-8b",
                  .layers = 32,
                  .hidden = 4096,
                  .heads = 32,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 14336,
                  .vocab = 128256,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face Qwen/Qwen2-7B, config.json: num_hidden_layers 28, hidden_size 3584,
      // num_attention_heads 28, num_key_value_heads 4, head_dim 3584/28 = 128,
      // intermediate_size 18944, vocab_size 152064, torch_dtype bfloat16,
      // tie_word_embeddings false; Qwen2Attention's q/k/v projections carry a bias
      // (transformers' modeling_qwen2.py, bias=True).
      ModelConfig{.name = "qwen2-7b",
                  .layers = 28,
                  .hidden = 3584,
                  .heads = 28,
                  .kv_heads = 4,
                  .head_dim = 128,
                  .intermediate = 18944,
                  .vocab = 152064,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = true,
                  .tied_embeddings = false},
      // Source: Hugging Face Qwen/Qwen2.5-14B-Instruct, config.json: num_hidden_layers 48,
      // hidden_size 5120, num_attention_heads 40, num_key_value_heads 8, head_dim 5120/40 = 128,
      // intermediate_size 13824, vocab_size 152064, torch_dtype bfloat16, tie_word_embeddings
      // false; Qwen2 attention has q/k/v biases (as qwen2-7b). 14.8 B parameters: its 29.5 GB of
      // BF16 weights need two 24 GB boards (tensor parallelism, tensor_parallel.hpp).
      ModelConfig{.name = "qwen2.5-14b",
                  .layers = 48,
                  .hidden = 5120,
                  .heads = 40,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 13824,
                  .vocab = 152064,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = true,
                  .tied_embeddings = false},
      // Source: Hugging Face mistralai/Mixtral-8x7B-v0.1, config.json: num_hidden_layers 32,
      // hidden_size 4096, num_attention_heads 32, num_key_value_heads 8, head_dim 4096/32 = 128,
      // intermediate_size 14336 (each expert's), num_local_experts 8, num_experts_per_tok 2,
      // vocab_size 32000, torch_dtype bfloat16, tie_word_embeddings false. 46.7 B parameters.
      ModelConfig{.name = "mixtral-8x7b",
                  .layers = 32,
                  .hidden = 4096,
                  .heads = 32,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 14336,
                  .vocab = 32000,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false,
                  .experts = 8,
                  .experts_per_token = 2},
      // Source: Hugging Face meta-llama/Llama-2-7b-hf, config.json: num_hidden_layers 32,
      // hidden_size 4096, num_attention_heads 32, num_key_value_heads 32 (no grouped-query
      // attention), head_dim 4096/32 = 128, intermediate_size 11008, vocab_size 32000, torch_dtype
      // float16, tie_word_embeddings false; no attention bias.
      ModelConfig{.name = "llama-2-7b",
                  .layers = 32,
                  .hidden = 4096,
                  .heads = 32,
                  .kv_heads = 32,
                  .head_dim = 128,
                  .intermediate = 11008,
                  .vocab = 32000,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face meta-llama/Llama-2-13b-hf, config.json: num_hidden_layers 40,
      // hidden_size 5120, num_attention_heads 40, num_key_value_heads 40, head_dim 5120/40 = 128,
      // intermediate_size 13824, vocab_size 32000, torch_dtype float16, tie_word_embeddings false.
      ModelConfig{.name = "llama-2-13b",
                  .layers = 40,
                  .hidden = 5120,
                  .heads = 40,
                  .kv_heads = 40,
                  .head_dim = 128,
                  .intermediate = 13824,
                  .vocab = 32000,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face meta-llama/Llama-2-70b-hf, config.json: num_hidden_layers 80,
      // hidden_size 8192, num_attention_heads 64, num_key_value_heads 8, head_dim 8192/64 = 128,
      // intermediate_size 28672, vocab_size 32000, torch_dtype float16, tie_word_embeddings false.
      ModelConfig{.name = "llama-2-70b",
                  .layers = 80,
                  .hidden = 8192,
                  .heads = 64,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 28672,
                  .vocab = 32000,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face meta-llama/Llama-3.1-8B, config.json: the layer shapes of llama-3-8b
      // (num_hidden_layers 32, hidden_size 4096, num_attention_heads 32, num_key_value_heads 8,
      // intermediate_size 14336, vocab_size 128256, torch_dtype bfloat16, tie_word_embeddings
      // false); Llama 3.1 changes only rope_scaling and the context length.
      ModelConfig{.name = "llama-3.1-8b",
                  .layers = 32,
                  .hidden = 4096,
                  .heads = 32,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 14336,
                  .vocab = 128256,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face meta-llama/Meta-Llama-3-70B, config.json: num_hidden_layers 80,
      // hidden_size 8192, num_attention_heads 64, num_key_value_heads 8, head_dim 8192/64 = 128,
      // intermediate_size 28672, vocab_size 128256, torch_dtype bfloat16, tie_word_embeddings
      // false.
      ModelConfig{.name = "llama-3-70b",
                  .layers = 80,
                  .hidden = 8192,
                  .heads = 64,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 28672,
                  .vocab = 128256,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face meta-llama/Llama-3.1-70B, config.json: the layer shapes of llama-3-70b
      // (num_hidden_layers 80, hidden_size 8192, num_attention_heads 64, num_key_value_heads 8,
      // intermediate_size 28672, vocab_size 128256, torch_dtype bfloat16); only rope_scaling and
      // the context length differ.
      ModelConfig{.name = "llama-3.1-70b",
                  .layers = 80,
                  .hidden = 8192,
                  .heads = 64,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 28672,
                  .vocab = 128256,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face mistralai/Mistral-7B-v0.1, config.json: num_hidden_layers 32,
      // hidden_size 4096, num_attention_heads 32, num_key_value_heads 8, head_dim 4096/32 = 128,
      // intermediate_size 14336, vocab_size 32000, torch_dtype bfloat16, tie_word_embeddings false
      // (sliding_window 4096 is not modelled: attention reads the whole context).
      ModelConfig{.name = "mistral-7b",
                  .layers = 32,
                  .hidden = 4096,
                  .heads = 32,
                  .kv_heads = 8,
                  .head_dim = 128,
                  .intermediate = 14336,
                  .vocab = 32000,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = false,
                  .tied_embeddings = false},
      // Source: Hugging Face Qwen/Qwen2.5-7B, config.json: num_hidden_layers 28, hidden_size 3584,
      // num_attention_heads 28, num_key_value_heads 4, head_dim 3584/28 = 128, intermediate_size
      // 18944, vocab_size 152064, torch_dtype bfloat16, tie_word_embeddings false; q/k/v biases as
      // qwen2-7b.
      ModelConfig{.name = "qwen2.5-7b",
                  .layers = 28,
                  .hidden = 3584,
                  .heads = 28,
                  .kv_heads = 4,
                  .head_dim = 128,
                  .intermediate = 18944,
                  .vocab = 152064,
                  .bytes_per_param = 2,
                  .kv_bytes_per_elem = 2,
                  .qkv_bias = true,
                  .tied_embeddings = false},
  };
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

double ModelConfig::parameters() const {
  const double h = hidden;
  const double q = static_cast<double>(heads) * head_dim;
  const double kv = static_cast<double>(kv_heads) * head_dim;
  const double attention = h * q + 2 * h * kv + q * h + (qkv_bias ? q + 2 * kv : 0);
  // Gate, up and down per expert, and the router's h x experts.
  const double mlp =
      experts > 0 ? experts * 3 * h * intermediate + h * experts : 3 * h * intermediate;
  const double norms = 2 * h;  // input and post-attention RMSNorm weights
  const double per_layer = attention + mlp + norms;
  const double embeddings = static_cast<double>(vocab) * h * (tied_embeddings ? 1 : 2);
  return layers * per_layer + embeddings + h;  // + final RMSNorm
}

double ModelConfig::weight_bytes() const {
  if (precision != Precision::kFp8) return parameters() * bytes_per_param;
  // The decoder layers' projection and MLP matrices are FP8; biases, norms, the router, the
  // embeddings and the LM head are not.
  const double h = hidden;
  const double q = static_cast<double>(heads) * head_dim;
  const double kv = static_cast<double>(kv_heads) * head_dim;
  const double mlp = 3 * h * intermediate * std::max(experts, 1);
  const double linear = layers * (h * (q + 2 * kv) + q * h + mlp);
  return linear * element_bytes(precision) + (parameters() - linear) * bytes_per_param;
}

double ModelConfig::kv_bytes_per_token() const {
  return 2.0 * layers * kv_heads * head_dim * kv_bytes_per_elem;
}

double ModelConfig::embedding_bytes() const {
  return static_cast<double>(vocab) * hidden * bytes_per_param;
}

core::Status ModelConfig::validate() const {
  const auto bad = [&](std::string_view field, long long value) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': {} must be a positive integer, got {}", name, field, value);
  };
  if (name.empty()) {
    return core::fail(core::Domain::kWorkload, core::Code::kInvalidArgument,
                      "model config has an empty name; give it a catalog key such as 'llama-3-8b'");
  }
  const std::pair<std::string_view, int> fields[] = {
      {"layers", layers},
      {"hidden", hidden},
      {"heads", heads},
      {"kv_heads", kv_heads},
      {"head_dim", head_dim},
      {"intermediate", intermediate},
      {"vocab", vocab},
      {"bytes_per_param", bytes_per_param},
      {"kv_bytes_per_elem", kv_bytes_per_elem},
  };
  for (const auto& [field, value] : fields) {
    if (value <= 0) return bad(field, value);
  }
  if (experts < 0 || (experts == 0 && experts_per_token != 0) ||
      (experts > 0 && (experts_per_token < 1 || experts_per_token > experts))) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': experts_per_token ({}) must be between 1 and experts ({}) for "
                       "a mixture of experts, and both 0 for a dense MLP",
                       name, experts_per_token, experts);
  }
  if (precision != Precision::kFp8 && precision != Precision::kBf16 &&
      precision != Precision::kFp16) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': precision {} is a training format; serving runs fp8, bf16 or "
                       "fp16",
                       name, to_string(precision));
  }
  if (heads % kv_heads != 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': heads ({}) must be a multiple of kv_heads ({}) for "
                       "grouped-query attention",
                       name, heads, kv_heads);
  }
  return {};
}

const std::vector<ModelConfig>& model_catalog() {
  static const std::vector<ModelConfig> catalog = build_catalog();
  return catalog;
}

core::Result<ModelConfig> find_model(std::string_view name) {
  const std::string key = lower(name);
  std::string known;
  for (const auto& m : model_catalog()) {
    if (m.name == key) return m;
    known += known.empty() ? m.name : ", " + m.name;
  }
  return core::failf(core::Domain::kWorkload, core::Code::kNotFound,
                     "unknown model '{}'; known models: {}", name, known);
}

}  // namespace tessera::workload
