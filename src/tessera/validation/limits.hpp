#pragma once
// The largest configuration tessera validate and tessera kernel rebuild. Far above any real
// kernel or model (the shared profiles reach m = 131,072 and 32,768-token prompts), and low
// enough that the builders' grids and byte counts stay exact in 64 bits and a step's kernel list
// stays small: a measurement beyond them is refused with the limit named, not simulated.

#include <cstdint>

namespace tessera::validation {

inline constexpr std::int64_t kMaxGemmDim = std::int64_t{1} << 24;  // m, n, k
inline constexpr int kMaxModelWidth = 1 << 20;                      // hidden, intermediate
inline constexpr int kMaxHeads = 4096;                              // heads, kv_heads, head_dim
inline constexpr int kMaxVocab = 1 << 24;
inline constexpr int kMaxLayers = 1024;
inline constexpr int kMaxTensorParallel = 64;
inline constexpr int kMaxBatch = 1 << 16;   // sequences in a step
inline constexpr int kMaxTokens = 1 << 22;  // seq_len, kv_len
inline constexpr std::int64_t kMaxCollectiveBytes = std::int64_t{1} << 40;
inline constexpr int kMaxCollectiveGpus = 1024;

}  // namespace tessera::validation
