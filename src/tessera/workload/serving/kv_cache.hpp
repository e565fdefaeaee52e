#pragma once
// vLLM's paged KV cache as its V0 scheduler uses it (vllm/core/block_manager.py and
// vllm/core/scheduler.py, v0.6): the cache is `blocks` blocks of `block_size` tokens, and a
// sequence holds ceil(tokens / block_size) of them. A prompt is admitted only while admitting it
// leaves `watermark` of the blocks free, so that the running sequences can still grow; never if
// it would not fit an empty cache beside that reserve (vLLM drops it with an error). A running
// sequence that needs a block when none is free preempts the latest-admitted running sequence,
// whose blocks are freed and whose tokens are recomputed by a later prefill (vLLM's
// PreemptionMode.RECOMPUTE, its default for one sequence per request).
//
// size_kv_cache() sizes the cache the way vLLM's worker does after its profiling run
// (Worker.determine_num_available_blocks): the engine may use `gpu_memory_utilization` of the
// board, and the cache gets what the weights and the forward pass's peak activations leave.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/models/tensor_parallel.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {

struct KvCacheConfig {
  std::int64_t blocks = 0;  // 0: no limit
  int block_size = 16;      // tokens per block: vLLM's CacheConfig default
  double watermark = 0.01;  // share of the blocks admissions keep free: vLLM's default
};

// blocks >= 0, block_size in [1, 1024], watermark in [0, 1); the error names the field.
core::Status validate(const KvCacheConfig& c);

struct KvCacheSizing {
  double gpu_memory_utilization = 0.9;  // vLLM's EngineArgs default
  int block_size = 16;
  double watermark = 0.01;
};

// One GPU's memory as a serving engine lays it out, in bytes.
struct ServingMemory {
  double budget = 0;       // gpu_memory_utilization of the board
  double weights = 0;      // this GPU's shard of the weights
  double activations = 0;  // the peak of one forward pass (see kv_cache.cpp)
  double kv_cache = 0;     // blocks * block bytes
  double kv_bytes_per_token = 0;
  KvCacheConfig cache;
  KvCacheSizing sizing;  // what it was sized with, to size it again on other memory
};

// The cache one GPU of `tp` holds for model `m` on a board of `memory_bytes`, with prefill
// batches of up to `max_batched_tokens` and up to `max_num_seqs` sequences. Fails (an
// out-of-memory, naming what does not fit) when the weights and activations leave no block.
core::Result<ServingMemory> size_kv_cache(const ModelConfig& m, const TensorParallel& tp,
                                          std::int64_t memory_bytes, const KvCacheSizing& sizing,
                                          int max_batched_tokens, int max_num_seqs);

class KvCache {
 public:
  enum class Admission { kNow, kLater, kNever };

  // `sequences`: how many sequence indices the caller uses (0 .. sequences-1).
  KvCache(KvCacheConfig config, std::size_t sequences);

  bool limited() const { return config_.blocks > 0; }
  const KvCacheConfig& config() const { return config_; }
  // Whether a prompt of `tokens` can be admitted now, later, or never.
  Admission admission(std::int64_t tokens) const;
  // The sequence, holding no block, takes the blocks for `tokens` (admission() said kNow).
  void allocate(std::size_t sequence, std::int64_t tokens);
  // Whether the free blocks let the sequence hold `tokens`; grow() takes them.
  bool can_grow(std::size_t sequence, std::int64_t tokens) const;
  void grow(std::size_t sequence, std::int64_t tokens);
  void free(std::size_t sequence);

  std::int64_t used_blocks() const { return used_; }
  std::int64_t peak_used_blocks() const { return peak_; }

 private:
  std::int64_t blocks_for(std::int64_t tokens) const;
  std::int64_t free_blocks() const { return config_.blocks - used_; }
  void take(std::size_t sequence, std::int64_t blocks);

  KvCacheConfig config_;
  std::int64_t watermark_blocks_;
  std::vector<std::int64_t> held_;  // blocks per sequence
  std::int64_t used_ = 0;
  std::int64_t peak_ = 0;
};

}  // namespace tessera::workload
