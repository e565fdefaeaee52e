// tessera's own kernels (semantics and parameter layouts: kernel_params.h). Compiled by nvcc into
// the embedded fatbin (cmake/TesseraCuda.cmake) and launched through cuda::KernelModule.
#include <mma.h>
#include <stdint.h>

#include <cuda/atomic>

#include "tessera/cuda/kernel_params.h"

namespace {

// FP32 chains per thread: an FMA's dependent-issue latency is 4 cycles on sm_80/sm_90 (Jia et
// al., "Dissecting the Ampere/Hopper GPU architecture via microbenchmarking"), so 8 independent
// chains keep the FMA pipe busy even with one warp per scheduler.
constexpr int kFmaChains = 8;
// Tensor-core accumulators per warp: independent MMA chains so that one warp's MMAs overlap.
// ASSUMPTION: 4 covers the HMMA latency (about 16-32 cycles on sm_80/sm_90, same source) at the
// pipe's issue rate of one MMA every few cycles per scheduler.
constexpr int kMmaChains = 4;
// A float bit pattern the chains below never produce (a NaN: they converge to finite values), so
// the sink store that keeps the arithmetic alive never happens.
constexpr uint32_t kImpossible = 0x7fbadbadu;

// part c of n equal parts of `total`: [total*c/n, total*(c+1)/n), exact for any total.
__device__ __forceinline__ uint64_t part_begin(uint64_t total, uint32_t c, uint32_t n) {
  return total / n * c + total % n * c / n;
}

// FP32 work: `count` FMAs spread over kFmaChains dependent chains.
__device__ __forceinline__ void fma_work(float (&x)[kFmaChains], uint32_t count, float a, float b) {
  uint32_t i = 0;
  for (; i + kFmaChains <= count; i += kFmaChains) {
#pragma unroll
    for (int k = 0; k < kFmaChains; ++k) x[k] = fmaf(x[k], a, b);
  }
  for (; i < count; ++i) x[0] = fmaf(x[0], a, b);
}

using namespace nvcuda;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Tensor work: `count` 16x16x16 MMAs of one full warp over kMmaChains accumulators.
__device__ __forceinline__ void mma_work(FragC (&acc)[kMmaChains], const FragA& a, const FragB& b,
                                         uint32_t count) {
  uint32_t i = 0;
  for (; i + kMmaChains <= count; i += kMmaChains) {
#pragma unroll
    for (int k = 0; k < kMmaChains; ++k) wmma::mma_sync(acc[k], a, b, acc[k]);
  }
  for (; i < count; ++i) wmma::mma_sync(acc[0], a, b, acc[0]);
}

// DRAM work: read vectors [lo, hi) of the block's read half and write their twins in the write
// half; thread t takes vectors lo + t, lo + t + blockDim.x, ... (coalesced). Returns the XOR of
// what was read, so the loads cannot be dropped.
__device__ __forceinline__ uint32_t memory_work(const TesseraEmulateParams& p, uint64_t bid,
                                                uint64_t vectors, uint64_t lo, uint64_t hi,
                                                uint32_t chunk) {
  uint64_t i = lo + threadIdx.x;
  if (i >= hi) return 0;  // also every thread when the kernel moves no bytes (no scratch then)
  char* const base = reinterpret_cast<char*>(p.scratch);
  const uint64_t size = p.scratch_bytes;
  const uint64_t start =
      static_cast<uint64_t>(static_cast<unsigned __int128>(bid) * p.bytes_per_block % size);
  const uint64_t stride = uint64_t{blockDim.x} * 16 % size;
  uint64_t rd = (start + i % size * 16) % size;
  uint64_t wr = (rd + vectors % size * 16) % size;
  uint32_t fold = 0;
  for (; i < hi; i += blockDim.x) {
    const uint4 v = *reinterpret_cast<const uint4*>(base + rd);
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
    *reinterpret_cast<uint4*>(base + wr) =
        make_uint4(static_cast<uint32_t>(i), static_cast<uint32_t>(bid), chunk, fold);
    rd += stride;
    if (rd >= size) rd -= size;
    wr += stride;
    if (wr >= size) wr -= size;
  }
  return fold;
}

}  // namespace

// 1024 threads per block is the hardware's maximum; the bound caps registers at 64 per thread so
// that every block shape a workload::Kernel may have can launch.
extern "C" __global__ void __launch_bounds__(1024) tessera_emulate(TesseraEmulateParams p) {
  const uint64_t bid = blockIdx.x + p.block_offset;
  if (bid >= p.virtual_blocks) return;
  uint32_t* const progress = reinterpret_cast<uint32_t*>(p.progress);
  const uint32_t chunks = p.checkpoints + 1;
  const uint32_t first = p.checkpoints > 0 ? progress[bid] : 0;
  if (first >= chunks) return;

  __shared__ uint32_t stop;
  const bool tensor = p.pipe == TESSERA_PIPE_TENSOR_FP16;
  const bool full_warp = (threadIdx.x / 32 + 1) * 32 <= blockDim.x;
  const uint64_t vectors = p.bytes_per_block / 32;  // read vectors (each has a written twin)

  // Values the compiler cannot predict, converging to a finite fixed point b / (1 - a).
  const float a = 0.999f - 1e-6f * static_cast<float>(threadIdx.x & 7);
  const float b = 1e-3f * static_cast<float>(bid & 15);
  float x[kFmaChains];
#pragma unroll
  for (int k = 0; k < kFmaChains; ++k) x[k] = static_cast<float>(threadIdx.x + k);
  FragA fa;
  FragB fb;
  FragC acc[kMmaChains];
  if (tensor && full_warp) {
    wmma::fill_fragment(fa, __float2half(a));
    wmma::fill_fragment(fb, __float2half(b));
#pragma unroll
    for (int k = 0; k < kMmaChains; ++k) wmma::fill_fragment(acc[k], static_cast<float>(k));
  }
  uint32_t fold = 0;
  uint32_t c = first;
  for (; c < chunks; ++c) {
    if (c > 0 && p.yield_flag != 0) {
      if (threadIdx.x == 0) {
        cuda::atomic_ref<uint32_t, cuda::thread_scope_device> flag(
            *reinterpret_cast<uint32_t*>(p.yield_flag));
        stop = flag.load(cuda::std::memory_order_relaxed);
      }
      __syncthreads();
      const bool yield = stop != 0;
      __syncthreads();  // every thread has read `stop` before thread 0 may overwrite it
      if (yield) break;
    }
    const uint32_t count = static_cast<uint32_t>(part_begin(p.fma_per_thread, c + 1, chunks) -
                                                 part_begin(p.fma_per_thread, c, chunks));
    if (!tensor) {
      fma_work(x, count, a, b);
    } else if (full_warp) {
      mma_work(acc, fa, fb, count);
    }
    fold ^= memory_work(p, bid, vectors, part_begin(vectors, c, chunks),
                        part_begin(vectors, c + 1, chunks), c);
  }

  float sum = 0;
#pragma unroll
  for (int k = 0; k < kFmaChains; ++k) sum += x[k];
  if (tensor && full_warp) {
#pragma unroll
    for (int k = 0; k < kMmaChains; ++k) sum += acc[k].x[0];
  }
  if (__float_as_uint(sum) == kImpossible) *reinterpret_cast<uint32_t*>(p.sink) = fold;

  if (threadIdx.x == 0) {
    if (p.checkpoints > 0) progress[bid] = c;
    if (c < chunks && p.yielded_blocks != 0) {
      atomicAdd(reinterpret_cast<unsigned int*>(p.yielded_blocks), 1u);
    }
  }
}

// One thread, resident: polls the mailbox in mapped host memory (system-scope acquire loads, cuda-
// api-facts.md section 6), carries each new command out and acknowledges it.
extern "C" __global__ void tessera_control(TesseraControlParams p) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  TesseraControlMailbox* const box = reinterpret_cast<TesseraControlMailbox*>(p.mailbox);
  uint32_t* const flags = reinterpret_cast<uint32_t*>(p.yield_flags);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> seq(box->seq);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> op_ref(box->op);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> slot_ref(box->slot);
  cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ack(box->ack_seq);
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> ack_time(
      *reinterpret_cast<unsigned long long*>(&box->ack_time_ns));
  uint32_t seen = ack.load(cuda::std::memory_order_relaxed);
  for (;;) {
    const uint32_t s = seq.load(cuda::std::memory_order_acquire);
    if (s == seen) {
      __nanosleep(p.poll_ns);
      continue;
    }
    const uint32_t op = op_ref.load(cuda::std::memory_order_relaxed);
    const uint32_t slot = slot_ref.load(cuda::std::memory_order_relaxed);
    if ((op == TESSERA_CONTROL_YIELD || op == TESSERA_CONTROL_CLEAR) && slot < p.slots) {
      cuda::atomic_ref<uint32_t, cuda::thread_scope_device> flag(flags[slot]);
      flag.store(op == TESSERA_CONTROL_YIELD ? 1u : 0u, cuda::std::memory_order_release);
    }
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    ack_time.store(now, cuda::std::memory_order_relaxed);
    ack.store(s, cuda::std::memory_order_release);
    seen = s;
    if (op == TESSERA_CONTROL_EXIT) return;
  }
}

// out[bid] = sum_i x[bid * per_block + i] * w[i] in a fixed order: thread t sums i = t, t + T, ...
// in increasing i (T = blockDim.x), then a shared-memory tree whose shape depends only on T folds
// the partial sums. Nothing depends on gridDim or on which blocks share a launch.
extern "C" __global__ void __launch_bounds__(1024) tessera_range_dot(TesseraRangeDotParams p) {
  const uint64_t bid = blockIdx.x + p.block_offset;
  if (bid >= p.virtual_blocks) return;
  const float* const x = reinterpret_cast<const float*>(p.x) + bid * p.per_block;
  const float* const w = reinterpret_cast<const float*>(p.w);
  __shared__ float partial[1024];
  float acc = 0.0f;
  for (uint32_t i = threadIdx.x; i < p.per_block; i += blockDim.x) acc = fmaf(x[i], w[i], acc);
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = 512; s > 0; s >>= 1) {
    if (threadIdx.x < s && threadIdx.x + s < blockDim.x) {
      partial[threadIdx.x] += partial[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) reinterpret_cast<float*>(p.out)[bid] = partial[0];
}
