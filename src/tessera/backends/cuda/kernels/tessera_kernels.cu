// tessera's own kernels (semantics and parameter layouts: kernel_params.h). Compiled by nvcc into
// the embedded fatbin (cmake/TesseraCuda.cmake) and launched through cuda::KernelModule.
#include <mma.h>
#include <stdint.h>

#include <cuda/atomic>

#include "tessera/backends/cuda/kernel_params.h"

namespace {

// FP32 chains per thread: an FMA's dependent-issue latency is 4 cycles on sm_80/sm_90 (Jia et
// al., "Dissecting the Ampere/Hopper GPU architecture via microbenchmarking"), so 8 independent
// chains keep the FMA pipe busy even with one warp per scheduler.
constexpr int kFmaChains = 8;
// Tensor-core accumulators per warp: independent MMA chains so that one warp's MMAs overlap.
// ASSUMPTION: 2 chains per warp, with the two or more warps per scheduler that blocks of 256+
// threads at 2+ blocks per SM give, cover the HMMA latency (about 16-32 cycles on sm_80/sm_90,
// same source). More chains would cost 8 registers each and push the kernel above 32 registers.
constexpr int kMmaChains = 2;
// A float bit pattern the chains below never produce (a NaN: they converge to finite values), so
// the sink store that keeps the arithmetic alive never happens.
constexpr uint32_t kImpossible = 0x7fbadbadu;

// Where part c of n equal parts of `total` (< 2^32, emulation.cpp checks) begins: total*c/n,
// exact in 64 bits.
__device__ __forceinline__ uint64_t part_begin(uint64_t total, uint32_t c, uint32_t n) {
  return static_cast<uint32_t>(total) * static_cast<uint64_t>(c) / n;
}

// The arithmetic of one thread, one type per pipe, so that only one pipe's registers are live.
// Inputs are values the compiler cannot predict; the chains converge to finite values.
struct Fp32Work {
  float x[kFmaChains];
  float a, b;
  __device__ Fp32Work(float a_, float b_) : a(a_), b(b_) {
#pragma unroll
    for (int k = 0; k < kFmaChains; ++k) x[k] = static_cast<float>(threadIdx.x + k);
  }
  // `count` FMAs spread over kFmaChains dependent chains.
  __device__ void run(uint32_t count) {
    uint32_t i = 0;
    for (; i + kFmaChains <= count; i += kFmaChains) {
#pragma unroll
      for (int k = 0; k < kFmaChains; ++k) x[k] = fmaf(x[k], a, b);
    }
    for (; i < count; ++i) x[0] = fmaf(x[0], a, b);
  }
  __device__ float sum() const {
    float s = 0;
#pragma unroll
    for (int k = 0; k < kFmaChains; ++k) s += x[k];
    return s;
  }
};

using namespace nvcuda;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

struct TensorWork {
  FragA fa;
  FragB fb;
  FragC acc[kMmaChains];
  bool active;  // a full warp: warp-wide MMAs need all 32 threads
  __device__ TensorWork(float a, float b) : active((threadIdx.x / 32 + 1) * 32 <= blockDim.x) {
    if (!active) return;
    wmma::fill_fragment(fa, __float2half(a));
    wmma::fill_fragment(fb, __float2half(b));
#pragma unroll
    for (int k = 0; k < kMmaChains; ++k) wmma::fill_fragment(acc[k], static_cast<float>(k));
  }
  // `count` 16x16x16 MMAs of this warp over kMmaChains accumulators.
  __device__ void run(uint32_t count) {
    if (!active) return;
    uint32_t i = 0;
    for (; i + kMmaChains <= count; i += kMmaChains) {
#pragma unroll
      for (int k = 0; k < kMmaChains; ++k) wmma::mma_sync(acc[k], fa, fb, acc[k]);
    }
    for (; i < count; ++i) wmma::mma_sync(acc[0], fa, fb, acc[0]);
  }
  __device__ float sum() const {
    float s = 0;
    if (!active) return s;
#pragma unroll
    for (int k = 0; k < kMmaChains; ++k) s += acc[k].x[0];
    return s;
  }
};

// DRAM work: read vectors [lo, hi) of the block's read half and write their twins in the write
// half; thread t takes vectors lo + t, lo + t + blockDim.x, ... (coalesced). Returns the XOR of
// what was read, so the loads cannot be dropped. The scratch size is a power of two, so offsets
// wrap with a mask: 64- or 128-bit remainders would take the kernel from 32 to 46-60 registers.
__device__ __forceinline__ uint32_t memory_work(const TesseraEmulateParams& p, uint64_t bid,
                                                uint64_t vectors, uint64_t lo, uint64_t hi,
                                                uint32_t chunk) {
  uint64_t i = lo + threadIdx.x;
  if (i >= hi) return 0;  // also every thread when the kernel moves no bytes (no scratch then)
  char* const base = reinterpret_cast<char*>(p.scratch);
  const uint64_t size = p.scratch_bytes;
  const uint64_t start = bid * p.bytes_per_block & (size - 1);
  const uint64_t stride = uint64_t{blockDim.x} * 16 & (size - 1);
  uint64_t rd = (start + i * 16) & (size - 1);
  uint64_t wr = (rd + vectors * 16) & (size - 1);
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

// Chunks [first, chunks) of virtual block `bid`; returns the chunks done when it stops.
template <typename Work>
__device__ __forceinline__ uint32_t emulate_block(const TesseraEmulateParams& p, uint64_t bid,
                                                  uint32_t first, uint32_t chunks) {
  __shared__ uint32_t stop;
  const uint64_t vectors = p.bytes_per_block / 32;  // read vectors (each has a written twin)
  Work work(0.999f - 1e-6f * static_cast<float>(threadIdx.x & 7),
            1e-3f * static_cast<float>(bid & 15));
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
    work.run(static_cast<uint32_t>(part_begin(p.fma_per_thread, c + 1, chunks) -
                                   part_begin(p.fma_per_thread, c, chunks)));
    fold ^= memory_work(p, bid, vectors, part_begin(vectors, c, chunks),
                        part_begin(vectors, c + 1, chunks), c);
  }
  if (__float_as_uint(work.sum()) == kImpossible) *reinterpret_cast<uint32_t*>(p.sink) = fold;
  return c;
}

// At most 32 registers per thread (__maxnreg__, CUDA 12.4+; 65536 registers / 2048 threads), so
// registers never hold residency below the SM's thread limit on sm_80/89/90, and shared memory
// alone (emulation.hpp) brings it down to the simulator's occupancy. Blocks of up to 1024 threads
// launch. ptxas: 32 registers, no spills, on all three.
extern "C" __global__ void __maxnreg__(32) tessera_emulate(TesseraEmulateParams p) {
  const uint64_t bid = blockIdx.x + p.block_offset;
  if (bid >= p.virtual_blocks) return;
  uint32_t* const progress = reinterpret_cast<uint32_t*>(p.progress);
  const uint32_t chunks = p.checkpoints + 1;
  const uint32_t first = p.checkpoints > 0 ? progress[bid] : 0;
  if (first >= chunks) return;
  const uint32_t done = p.pipe == TESSERA_PIPE_TENSOR_FP16
                            ? emulate_block<TensorWork>(p, bid, first, chunks)
                            : emulate_block<Fp32Work>(p, bid, first, chunks);
  if (threadIdx.x == 0) {
    if (p.checkpoints > 0) progress[bid] = done;
    if (done < chunks && p.yielded_blocks != 0) {
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
