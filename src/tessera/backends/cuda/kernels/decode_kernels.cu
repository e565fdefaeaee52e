// The compute models' kernels (semantics and parameter layouts: decode_kernels.h; data layouts:
// src/tessera/workload/models/compute_data.hpp). Compiled by nvcc into the embedded fatbin
// tessera_fatbin_decode_kernels (cmake/TesseraCuda.cmake) and launched by the models in
// decode_step.cpp through cuda::KernelModule. Every reduction here has a fixed shape: a thread's
// strided share in index order, then a fixed tree over the block's threads, so results do not
// depend on how many SMs run the grid or in which order blocks are scheduled.
#include <cuda_fp16.h>
#include <stdint.h>

#include "tessera/backends/cuda/decode_kernels.h"

namespace {

constexpr unsigned kThreads = TESSERA_DECODE_THREADS;
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

// Fixed-tree block reductions over kThreads values (kThreads a power of two). `scratch` holds
// kThreads entries; every thread gets the result.
template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, T* scratch, Op op) {
  const unsigned t = threadIdx.x;
  scratch[t] = v;
  __syncthreads();
  for (unsigned stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (t < stride) scratch[t] = op(scratch[t], scratch[t + stride]);
    __syncthreads();
  }
  const T result = scratch[0];
  __syncthreads();  // scratch may be reused right after
  return result;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// A candidate of argmax: the value and its index; index UINT32_MAX means none yet.
struct Best {
  float value;
  uint32_t index;
};
__device__ __forceinline__ bool better(float v, uint32_t i, const Best& b) {
  if (isnan(v) || i == UINT32_MAX) return false;
  return b.index == UINT32_MAX || v > b.value || (v == b.value && i < b.index);
}
struct BestOp {
  __device__ Best operator()(const Best& a, const Best& b) const {
    return better(b.value, b.index, a) ? b : a;
  }
};

__device__ __forceinline__ uint64_t fnv_byte(uint64_t h, uint32_t byte) {
  return (h ^ byte) * kFnvPrime;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    tessera_decode_embed(TesseraDecodeEmbedParams p) {
  const int32_t token = reinterpret_cast<const int32_t*>(p.tokens)[blockIdx.x];
  const bool valid = token >= 0 && static_cast<uint32_t>(token) < p.vocab;
  const uint16_t* row = reinterpret_cast<const uint16_t*>(p.table) +
                        static_cast<uint64_t>(valid ? token : 0) * p.width;
  uint16_t* out =
      reinterpret_cast<uint16_t*>(p.hidden) + static_cast<uint64_t>(blockIdx.x) * p.width;
  for (uint32_t i = threadIdx.x; i < p.width; i += kThreads) out[i] = valid ? row[i] : 0;
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tessera_decode_softmax(TesseraDecodeSoftmaxParams p) {
  __shared__ float scratch[kThreads];
  const uint64_t base = static_cast<uint64_t>(blockIdx.x) * p.vocab;
  const float* x = reinterpret_cast<const float*>(p.logits) + base;
  float* y = reinterpret_cast<float*>(p.probs) + base;
  float m = -INFINITY;
  for (uint32_t i = threadIdx.x; i < p.vocab; i += kThreads) m = fmaxf(m, x[i]);
  const float row_max = block_reduce(m, scratch, MaxOp{});
  float s = 0.0f;
  for (uint32_t i = threadIdx.x; i < p.vocab; i += kThreads) s += expf(x[i] - row_max);
  const float sum = block_reduce(s, scratch, SumOp{});
  for (uint32_t i = threadIdx.x; i < p.vocab; i += kThreads) y[i] = expf(x[i] - row_max) / sum;
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tessera_decode_argmax(TesseraDecodeArgmaxParams p) {
  __shared__ Best scratch[kThreads];
  const float* x =
      reinterpret_cast<const float*>(p.probs) + static_cast<uint64_t>(blockIdx.x) * p.vocab;
  Best best{0.0f, UINT32_MAX};
  // Indices rise within a thread, so a strict > keeps the lowest index of equal values.
  for (uint32_t i = threadIdx.x; i < p.vocab; i += kThreads) {
    if (better(x[i], i, best)) best = Best{x[i], i};
  }
  const Best winner = block_reduce(best, scratch, BestOp{});
  if (threadIdx.x == 0) {
    reinterpret_cast<int32_t*>(p.tokens)[blockIdx.x] =
        winner.index == UINT32_MAX ? 0 : static_cast<int32_t>(winner.index);
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tessera_train_reduce(TesseraTrainReduceParams p) {
  constexpr unsigned kRows = TESSERA_TRAIN_REDUCE_ROWS;
  constexpr unsigned kWarps = kThreads / kRows;
  static_assert(kRows == 32, "a row per lane of a warp");
  __shared__ float partial[kWarps][kRows];
  const unsigned lane = threadIdx.x % kRows;
  const unsigned warp = threadIdx.x / kRows;
  const uint64_t row = static_cast<uint64_t>(blockIdx.x) * kRows + lane;
  const float* c = reinterpret_cast<const float*>(p.c);
  float s = 0.0f;
  if (row < p.m) {
    for (uint32_t j = warp; j < p.n; j += kWarps) {
      const float v = c[row + static_cast<uint64_t>(j) * p.m];
      s = __fmaf_rn(v, v, s);
    }
  }
  partial[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && row < p.m) {
    float total = 0.0f;
    for (unsigned w = 0; w < kWarps; ++w) total = __fadd_rn(total, partial[w][lane]);
    reinterpret_cast<float*>(p.row_sq)[row] = total;
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tessera_train_update(TesseraTrainUpdateParams p) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const uint64_t elements = static_cast<uint64_t>(p.k) * p.n;
  if (i >= elements) return;
  const uint64_t row = i % p.k;
  const uint64_t col = i / p.k;
  const uint64_t r = row % p.m;
  const float mean_sq = reinterpret_cast<const float*>(p.row_sq)[r] / static_cast<float>(p.n);
  const float g = reinterpret_cast<const float*>(p.c)[r + col * p.m] * rsqrtf(mean_sq + 1e-6f);
  __half* b = reinterpret_cast<__half*>(p.b);
  const float updated = fminf(fmaxf(__half2float(b[i]) - p.lr * g, -1.0f), 1.0f);
  b[i] = __float2half_rn(updated);
}

extern "C" __global__ void __launch_bounds__(kThreads)
    tessera_checksum_chunks(TesseraChecksumChunksParams p) {
  constexpr uint64_t kChunk = TESSERA_CHECKSUM_CHUNK_BYTES;
  const uint64_t chunk = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const uint64_t chunks = (p.bytes + kChunk - 1) / kChunk;
  if (chunk >= chunks) return;
  const uint64_t begin = chunk * kChunk;
  const uint64_t n = p.bytes - begin < kChunk ? p.bytes - begin : kChunk;
  const unsigned char* d = reinterpret_cast<const unsigned char*>(p.data) + begin;
  uint64_t h = kFnvOffset;
  uint64_t j = 0;
  // 16-byte loads where the chunk allows (device allocations and chunk starts are 16-aligned
  // whenever `data` is); bytes are hashed in address order either way.
  if ((reinterpret_cast<uintptr_t>(d) & 15u) == 0) {
    for (; j + 16 <= n; j += 16) {
      const uint4 v = *reinterpret_cast<const uint4*>(d + j);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
#pragma unroll
        for (int k = 0; k < 4; ++k) h = fnv_byte(h, (words[w] >> (8 * k)) & 0xffu);
      }
    }
  }
  for (; j < n; ++j) h = fnv_byte(h, d[j]);
  reinterpret_cast<uint64_t*>(p.chunk_hashes)[chunk] = h;
}

extern "C" __global__ void tessera_checksum_combine(TesseraChecksumCombineParams p) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const uint64_t* chunk_hashes = reinterpret_cast<const uint64_t*>(p.chunk_hashes);
  uint64_t h = kFnvOffset;
  for (uint64_t i = 0; i < p.chunks; ++i) {
    uint64_t c = chunk_hashes[i];
    for (int k = 0; k < 8; ++k, c >>= 8) h = fnv_byte(h, static_cast<uint32_t>(c & 0xffu));
  }
  *reinterpret_cast<uint64_t*>(p.out) = h;
}
