#include "tessera/workload/serving/kv_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/core/try.hpp"

namespace tessera::workload {

using core::Code;
using core::Domain;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kMaxBlockSize = 1024;
constexpr int kActivationBytes = 2;  // BF16/FP16 activations
constexpr int kLogitBytes = 4;       // vLLM's sampler works on FP32 logits

core::Status validate_block_size(int block_size, double watermark) {
  if (block_size < 1 || block_size > kMaxBlockSize) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "kv_cache block_size {} is out of range: use 1 to {} tokens (vLLM: 16)",
                       block_size, kMaxBlockSize);
  }
  if (!(watermark >= 0 && watermark < 1)) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "kv_cache watermark {} is out of range: use a share in [0, 1) (vLLM: 0.01)",
                       watermark);
  }
  return {};
}

// ASSUMPTION: the peak of PyTorch's allocator in vLLM's profiling run (a forward pass of
// max_batched_tokens tokens, then sampling for max_num_seqs sequences) is the MLP's live tensors
// (its input, the fused gate/up output and the activation, per routed expert for a mixture) plus
// the FP32 logits; vLLM measures it instead, and also subtracts CUDA-context and NCCL memory
// (a few hundred MB) not counted here. For Llama-3-8B at 8192 tokens this gives 0.90 GiB.
double activation_peak_bytes(const ModelConfig& shard, int max_batched_tokens, int max_num_seqs) {
  const double routed = shard.experts > 0 ? shard.experts_per_token : 1;
  const double per_token = 2.0 * shard.hidden + 3.0 * routed * shard.intermediate;
  return static_cast<double>(max_batched_tokens) * per_token * kActivationBytes +
         static_cast<double>(max_num_seqs) * shard.vocab * kLogitBytes;
}

}  // namespace

core::Status validate(const KvCacheConfig& c) {
  if (c.blocks < 0) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "kv_cache blocks ({}) must be 0 (no limit) or more", c.blocks);
  }
  return validate_block_size(c.block_size, c.watermark);
}

core::Result<ServingMemory> size_kv_cache(const ModelConfig& m, const TensorParallel& tp,
                                          std::int64_t memory_bytes, const KvCacheSizing& sizing,
                                          int max_batched_tokens, int max_num_seqs) {
  if (!(sizing.gpu_memory_utilization > 0 && sizing.gpu_memory_utilization <= 1)) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "kv_cache gpu_memory_utilization {} is out of range: use a share in (0, 1] "
                       "(vLLM: 0.9)",
                       sizing.gpu_memory_utilization);
  }
  TESSERA_TRY(validate_block_size(sizing.block_size, sizing.watermark));
  const ModelConfig one = shard(m, tp.degree);
  ServingMemory out;
  out.budget = sizing.gpu_memory_utilization * static_cast<double>(memory_bytes);
  out.weights = m.weight_bytes() / tp.degree;
  out.activations = activation_peak_bytes(one, max_batched_tokens, max_num_seqs);
  out.kv_bytes_per_token = m.kv_bytes_per_token() / tp.degree;
  const double block_bytes = out.kv_bytes_per_token * sizing.block_size;
  const double left = out.budget - out.weights - out.activations;
  const auto blocks = static_cast<std::int64_t>(std::floor(std::max(left, 0.0) / block_bytes));
  if (blocks < 1) {
    return core::failf(Domain::kWorkload, Code::kResourceExhausted,
                       "out of memory: {} needs {:.2f} GiB for its weights{} and {:.2f} GiB for "
                       "activations, beside {:.2f} GiB ({} of {:.1f} GiB) on this GPU, leaving no "
                       "{}-token KV block; raise gpu_memory_utilization, shard it over more GPUs "
                       "or lower max_batched_tokens",
                       m.name, out.weights / kGiB,
                       tp.degree > 1 ? fmt::format(" (1/{} of them)", tp.degree) : "",
                       out.activations / kGiB, out.budget / kGiB, sizing.gpu_memory_utilization,
                       static_cast<double>(memory_bytes) / kGiB, sizing.block_size);
  }
  out.cache = KvCacheConfig{blocks, sizing.block_size, sizing.watermark};
  out.sizing = sizing;
  out.kv_cache = static_cast<double>(blocks) * block_bytes;
  return out;
}

KvCache::KvCache(KvCacheConfig config, std::size_t sequences)
    : config_(config),
      watermark_blocks_(
          static_cast<std::int64_t>(config.watermark * static_cast<double>(config.blocks))),
      held_(sequences, 0) {}

std::int64_t KvCache::blocks_for(std::int64_t tokens) const {
  return (std::max<std::int64_t>(tokens, 0) + config_.block_size - 1) / config_.block_size;
}

KvCache::Admission KvCache::admission(std::int64_t tokens) const {
  if (!limited()) return Admission::kNow;
  const std::int64_t need = blocks_for(tokens);
  if (config_.blocks - need < watermark_blocks_) return Admission::kNever;
  return free_blocks() - need >= watermark_blocks_ ? Admission::kNow : Admission::kLater;
}

void KvCache::take(std::size_t sequence, std::int64_t blocks) {
  held_[sequence] += blocks;
  used_ += blocks;
  peak_ = std::max(peak_, used_);
}

void KvCache::allocate(std::size_t sequence, std::int64_t tokens) {
  take(sequence, blocks_for(tokens));
}

bool KvCache::can_grow(std::size_t sequence, std::int64_t tokens) const {
  return !limited() || blocks_for(tokens) - held_[sequence] <= free_blocks();
}

void KvCache::grow(std::size_t sequence, std::int64_t tokens) {
  take(sequence, std::max<std::int64_t>(blocks_for(tokens) - held_[sequence], 0));
}

void KvCache::free(std::size_t sequence) {
  used_ -= held_[sequence];
  held_[sequence] = 0;
}

}  // namespace tessera::workload
