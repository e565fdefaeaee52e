// casys-kaist/LLMServingSim's H100 profiles: PyTorch-profiler times of Hugging Face eager
// modules (layers.csv, ns) and attention in vidur's format (attention.csv, ms).

#include <array>

#include "tessera/core/try.hpp"
#include "tessera/validation/csv_support.hpp"
#include "tessera/validation/profile_formats.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::validation::detail {

namespace {

// The catalog key of an upstream model directory.
std::string catalog_key(std::string_view model_dir) {
  if (model_dir == "Llama-3.1-8B") return "llama-3.1-8b";
  if (model_dir == "Llama-3.1-70B") return "llama-3.1-70b";
  if (model_dir == "Mixtral-8x7B-v0.1") return "mixtral-8x7b";
  return lower(model_dir);
}

std::int64_t shard(std::int64_t size, int tp) {
  return (size + tp - 1) / tp;
}

// A layer's nn.Linear as C[m,n] = A[m,k] x B[k,n] on one GPU's shard; nullopt if not a GEMM.
// lm_head is column-parallel (n = vocab/tp): its time halves from tp1 to tp2 (Llama-3.1-8B,
// 2048 tokens: 2.87 ms -> 1.42 ms) and again to tp4 (Llama-3.1-70B: 2.86 ms -> 1.40 ms).
struct Shape {
  std::int64_t n, k;
};
std::optional<Shape> gemm_shape(std::string_view layer, const workload::ModelConfig& m, int tp) {
  const std::int64_t q = static_cast<std::int64_t>(m.heads) * m.head_dim;
  const std::int64_t kv = static_cast<std::int64_t>(m.kv_heads) * m.head_dim;
  if (layer == "q_proj") return Shape{shard(q, tp), m.hidden};
  if (layer == "k_proj" || layer == "v_proj") return Shape{shard(kv, tp), m.hidden};
  if (layer == "o_proj") return Shape{m.hidden, shard(q, tp)};
  if (layer == "gate_proj" || layer == "up_proj") return Shape{shard(m.intermediate, tp), m.hidden};
  if (layer == "down_proj") return Shape{m.hidden, shard(m.intermediate, tp)};
  if (layer == "lm_head") return Shape{shard(m.vocab, tp), m.hidden};
  return std::nullopt;
}

// The builders' kernel for a non-GEMM module; empty if none.
std::string_view layer_kernel(std::string_view layer) {
  if (layer == "embedding") return "embedding";
  // Hugging Face's LlamaRMSNorm, with no fused residual add (the add is a separate module).
  if (layer == "input_layernorm" || layer == "post_layernorm" || layer == "final_layernorm") {
    return "input_rmsnorm";
  }
  if (layer == "rope") return "rotary_embedding";
  if (layer == "act_fn") return "silu_and_mul";
  if (layer == "attn") return kAttentionKernels;
  return {};
}

core::Result<MeasurementSet> read_layers(const ProfileFile& f, std::string_view model_dir) {
  ProfileReader<5> in(f.path);
  in.read_header(io::ignore_extra_column, "layer_name", "input", "kv_cache", "tp_size",
                 "latency(ns)");
  const std::string key = catalog_key(model_dir);
  const auto model = workload::find_model(key);
  // Mixtral's act_fn is the SiLU inside each expert, part of the MoE block.
  const bool moe = key.starts_with("mixtral");
  MeasurementSet out;
  SkipTally skips(f.relative);
  std::string name, input, kv_cache, tp_size, latency;
  while (in.read_row(name, input, kv_cache, tp_size, latency)) {
    if (!model) {
      skips.add(model.error().message());
      continue;
    }
    const unsigned line = in.get_file_line();
    auto cell = [&](std::string_view column) { return Cell{f.relative, line, column}; };
    TESSERA_ASSIGN_OR_RETURN(const int tokens, parse_int32(cell("input"), input, 1));
    TESSERA_ASSIGN_OR_RETURN(const int cached, parse_int32(cell("kv_cache"), kv_cache, 0));
    TESSERA_ASSIGN_OR_RETURN(const int tp, parse_int32(cell("tp_size"), tp_size, 1));
    TESSERA_ASSIGN_OR_RETURN(const auto ns, parse_time_ns(cell("latency(ns)"), latency, 0));
    if (name.starts_with("expert.") || (moe && name == "act_fn")) {
      skips.add(
          "Hugging Face's per-expert modules: the rows routed to each call are not recorded, "
          "and the builders model vLLM's fused MoE kernels instead");
      continue;
    }
    if (name == "gate") {
      skips.add(
          "the MoE block's router hook (42 us for one token: more than its 4096 x 8 GEMM, so "
          "it times the routing too): not one of the builders' kernels");
      continue;
    }
    Measurement row;
    row.source = fmt::format("{}:{}", f.relative, line);
    row.gpu = kH100;
    row.kind = MeasuredKind::kLayerKernels;
    row.precision = workload::Precision::kBf16;
    row.model = *model;
    row.tensor_parallel = tp;
    row.phase = workload::Phase::kPrefill;
    row.lengths = {tokens};
    if (const auto shape = gemm_shape(name, *model, tp)) {
      row.kind = MeasuredKind::kGemm;
      row.m = tokens;
      row.n = shape->n;
      row.k = shape->k;
      // Its cuBLAS has Stream-K kernels: the time of Llama-3.1-8B's o_proj (4096 x 4096) grows
      // smoothly from 512 to 568 tokens (28.2 -> 28.4 us), where vidur's H100 profile of the
      // same shape steps from 29 to 48 us as the 128-row tiles spill into a second wave.
      row.gemm_stream_k = true;
    } else if (const std::string_view kernel = layer_kernel(name); !kernel.empty()) {
      if (name == "attn" && cached != 0) {
        skips.add("attention over a KV cache (kv_cache > 0): a chunk after cached tokens");
        continue;
      }
      row.layer_kernels = {std::string(kernel)};
      if (name != "embedding") row.implementation = Implementation::kHfEager;
    } else {
      skips.add(fmt::format("layer '{}' is not known", name));
      continue;
    }
    if (!ns) {
      skips.add("latency(ns) is not a finite positive time");
      continue;
    }
    row.measured_ns = *ns;
    out.rows.push_back(std::move(row));
  }
  skips.append_to(out.skipped);
  return out;
}

constexpr std::array<const char*, 10> kAttention{"time_stats.attn_prefill.median",
                                                 "time_stats.attn_decode.median",
                                                 "n_embd",
                                                 "n_q_head",
                                                 "n_kv_head",
                                                 "num_tensor_parallel_workers",
                                                 "batch_size",
                                                 "prefill_chunk_size",
                                                 "kv_cache_size",
                                                 "is_prefill"};

// No row of this file is compared; each is read (a malformed decode row is an error) and counted
// with its reason. Prefill rows are chunked prefills: prefill_chunk_size new tokens with
// kv_cache_size in the cache, and kv_cache_size >= prefill_chunk_size in every row. vidur counts
// kv_cache_size as the tokens before the chunk, but the times step at kv_cache_size 64, 128, ...
// as if it included the chunk; the meaning is unclear, and prefill_step takes whole prompts only.
// Decode rows time a kernel no serving engine decodes with: LLMServingSim's profiler splits
// kv_cache_size over the batch and runs FlashAttention-2's varlen forward with one query per
// sequence and no split of the context, so each (sequence, query head) block walks its
// sequence's keys alone. The times show it: at 65,024 cached tokens on Llama-3.1-70B tp4 they
// halve with each doubling of the batch (1754, 853, 432, 220 us at batch 1, 2, 4, 8).
core::Result<MeasurementSet> read_attention(const ProfileFile& f, std::string_view model_dir) {
  ProfileReader<10> in(f.path);
  in.read_header(io::ignore_extra_column, kAttention[0], kAttention[1], kAttention[2],
                 kAttention[3], kAttention[4], kAttention[5], kAttention[6], kAttention[7],
                 kAttention[8], kAttention[9]);
  MeasurementSet out;
  SkipTally skips(f.relative);
  std::array<std::string, kAttention.size()> c;
  while (in.read_row(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9])) {
    const unsigned line = in.get_file_line();
    auto cell = [&](std::size_t i) { return Cell{f.relative, line, kAttention[i]}; };
    TESSERA_ASSIGN_OR_RETURN(const bool prefill, parse_bool(cell(9), c[9]));
    if (prefill) {
      skips.add(
          "chunked prefill (prefill_chunk_size new tokens, kv_cache_size in the cache, meaning "
          "unclear): prefill_step takes whole prompts");
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(const int hidden, parse_int32(cell(2), c[2], 1));
    TESSERA_ASSIGN_OR_RETURN(const int heads, parse_int32(cell(3), c[3], 1));
    TESSERA_ASSIGN_OR_RETURN(const int kv_heads, parse_int32(cell(4), c[4], 1));
    for (const std::size_t i : {5, 6}) TESSERA_TRY(parse_int32(cell(i), c[i], 1));
    TESSERA_TRY(parse_int32(cell(8), c[8], 0));
    TESSERA_TRY(parse_time_ns(cell(1), c[1], 6));
    if (hidden % heads != 0) {
      return std::unexpected(cell_error(
          cell(2), fmt::format("n_embd {} is not a multiple of n_q_head {}", hidden, heads)));
    }
    if (auto ok =
            attention_model(catalog_key(model_dir), heads, kv_heads, hidden / heads).validate();
        !ok) {
      return std::unexpected(ok.error().with_context(fmt::format("{}:{}", f.relative, line)));
    }
    skips.add(
        "decode timed as FlashAttention-2's varlen forward, one query per sequence and "
        "kv_cache_size / batch_size keys each, the context not split: not one of the kernels the "
        "builders model (vLLM's decode attention)");
  }
  skips.append_to(out.skipped);
  return out;
}

}  // namespace

core::Result<MeasurementSet> read_llmservingsim_layers(const ProfileFile& f,
                                                       std::string_view model_dir) {
  return guard_csv(f.relative, [&] { return read_layers(f, model_dir); });
}

core::Result<MeasurementSet> read_llmservingsim_attention(const ProfileFile& f,
                                                          std::string_view model_dir) {
  return guard_csv(f.relative, [&] { return read_attention(f, model_dir); });
}

}  // namespace tessera::validation::detail
