#include "tessera/workload/models/tensor_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "tessera/workload/kernels/gemm_shapes.hpp"
#include "tessera/workload/kernels/memory_bound.hpp"

namespace tessera::workload {

namespace {

bool finite_positive(double x) {
  return std::isfinite(x) && x > 0;
}

// NCCL's collectives run in a few channel blocks that copy and reduce one chunk while the
// previous one crosses the link. ASSUMPTION: the simulator does not pipeline inside a kernel, so
// the GPU-side pass (reading the input, adding what arrives, writing the result) is timed as one
// full-device elementwise pass ahead of the transfer: a small serial overestimate (about 46 us
// for a 2048-token prefill's 21 MB message against 0.87 ms on a 24 GB/s link).
Kernel collective(std::string_view name, std::int64_t elements, double dram_bytes, double flops,
                  double link_bytes, int steps, const TensorParallel& tp) {
  Kernel k = memory_bound({.name = name,
                           .kind = KernelClass::kCommunication,
                           .blocks = elementwise_blocks(elements),
                           .threads = kElementwiseThreads,
                           .flops = flops,
                           .bytes = dram_bytes,
                           .shared_memory_bytes = 0,
                           // The GPUs' blocks wait on each other through the ring.
                           .block_independent = false});
  k.host_link_bytes_per_block = link_bytes / static_cast<double>(k.blocks);
  k.host_link_bytes_per_s = tp.link_bytes_per_s / tp.penalty;
  k.link_steps = steps;
  return k;
}

// Rows (tokens) and sequences of one step, as the unsharded builders count them.
struct StepSize {
  std::int64_t tokens = 0;
  std::int64_t seqs = 0;
};

// Inserts the collectives into the first GPU's sequence of the sharded model: after the
// embedding, the output and down projections an all-reduce of tokens x hidden activations; the
// LM head covers the first GPU's share of the vocabulary and its logits are gathered.
KernelSequence add_collectives(KernelSequence seq, const ModelConfig& full,
                               const TensorParallel& tp, StepSize size) {
  const std::int64_t activations = size.tokens * full.hidden;
  const int e = full.bytes_per_param;
  const std::int64_t vocab_share = (full.vocab + tp.degree - 1) / tp.degree;
  for (auto& group : seq.groups) {
    std::vector<Kernel> out;
    out.reserve(group.kernels.size() + 2);
    for (const Kernel& k : group.kernels) {
      const std::string_view name = k.name;
      if (name == "lm_head") {
        out.push_back(make_gemm(dense_gemm("lm_head", size.seqs, vocab_share, full.hidden, e)));
        out.push_back(gather_to_first("logits_gather", size.seqs * full.vocab, e, tp));
        continue;
      }
      out.push_back(k);
      if (name == "embedding") {
        out.push_back(all_reduce("embedding_all_reduce", activations, e, tp));
      } else if (name == "o_proj") {
        out.push_back(all_reduce("attention_all_reduce", activations, e, tp));
      } else if (name == "down_proj" || name == "moe_sum") {
        out.push_back(all_reduce("mlp_all_reduce", activations, e, tp));
      }
    }
    group.kernels = std::move(out);
  }
  return seq;
}

}  // namespace

core::Status validate(const ModelConfig& m, const TensorParallel& tp) {
  if (tp.degree < 1) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': tensor-parallel degree must be at least 1, got {}", m.name,
                       tp.degree);
  }
  if (tp.degree == 1) return {};
  const std::pair<std::string_view, int> divided[] = {
      {"heads", m.heads}, {"kv_heads", m.kv_heads}, {"intermediate", m.intermediate}};
  for (const auto& [field, value] : divided) {
    if (value % tp.degree != 0) {
      return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                         "model '{}': {} ({}) is not divisible by the tensor-parallel degree {}; "
                         "pick a degree that divides heads, kv_heads and intermediate",
                         m.name, field, value, tp.degree);
    }
  }
  if (!finite_positive(tp.link_bytes_per_s)) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': tensor-parallel link rate must be a finite number of bytes/s "
                       "> 0, got {}",
                       m.name, tp.link_bytes_per_s);
  }
  if (!finite_positive(tp.penalty)) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "model '{}': topology penalty must be a finite number > 0, got {}", m.name,
                       tp.penalty);
  }
  return {};
}

ModelConfig shard(const ModelConfig& m, int degree) {
  ModelConfig s = m;
  s.heads = m.heads / degree;
  s.kv_heads = m.kv_heads / degree;
  s.intermediate = m.intermediate / degree;
  return s;
}

Kernel all_reduce(std::string_view name, std::int64_t elements, int elem_bytes,
                  const TensorParallel& tp) {
  const double n = tp.degree;
  const double bytes = static_cast<double>(elements) * elem_bytes;
  // Reduce-scatter adds n-1 received chunks of elements/n; input read once, result written once.
  // Reduce-scatter then all-gather, n - 1 ring steps each.
  return collective(name, elements, 2 * bytes, (n - 1) / n * static_cast<double>(elements),
                    2 * (n - 1) / n * bytes, 2 * (tp.degree - 1), tp);
}

Kernel gather_to_first(std::string_view name, std::int64_t elements, int elem_bytes,
                       const TensorParallel& tp) {
  const double n = tp.degree;
  const double received = (n - 1) / n * static_cast<double>(elements) * elem_bytes;
  return collective(name, elements, received, 0, received, tp.degree - 1, tp);
}

KernelSequence tp_prefill_step(const ModelConfig& m, const TensorParallel& tp,
                               std::span<const int> prompt_lengths) {
  if (tp.degree == 1 || prompt_lengths.empty()) return prefill_step(m, prompt_lengths);
  StepSize size;
  for (int len : prompt_lengths) size.tokens += std::max(len, 1);
  size.seqs = static_cast<std::int64_t>(prompt_lengths.size());
  return add_collectives(prefill_step(shard(m, tp.degree), prompt_lengths), m, tp, size);
}

KernelSequence tp_decode_step(const ModelConfig& m, const TensorParallel& tp,
                              std::span<const int> context_lengths) {
  if (tp.degree == 1 || context_lengths.empty()) return decode_step(m, context_lengths);
  const auto seqs = static_cast<std::int64_t>(context_lengths.size());
  return add_collectives(decode_step(shard(m, tp.degree), context_lengths), m, tp,
                         StepSize{.tokens = seqs, .seqs = seqs});
}

}  // namespace tessera::workload
