// Launch parameters of tessera's own kernels (src/tessera/backends/cuda/kernels/*.cu), shared by
// the kernels, the host code that launches them through cuLaunchKernel, and the fake driver that
// emulates them in tests (tests/support/native/fake_cuda). Plain C layouts of fixed-width fields
// only, so that nvcc, g++ and the fake agree byte for byte; every kernel takes exactly one
// argument, a pointer-free struct passed by value (kernelParams[0] points at it). Device pointers
// are CUdeviceptr values.
//
// Atomizable kernels take a block offset and the virtual grid: a launch of n blocks with offset o
// runs virtual blocks [o, o + n) and computes exactly what those blocks compute in one launch of
// the whole grid (bid = blockIdx.x + block_offset; gridDim is never used for indexing).
#ifndef TESSERA_CUDA_KERNEL_PARAMS_H_
#define TESSERA_CUDA_KERNEL_PARAMS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Kernel names in the embedded module (extern "C", so unmangled).
#define TESSERA_KERNEL_EMULATE "tessera_emulate"
#define TESSERA_KERNEL_CONTROL "tessera_control"
#define TESSERA_KERNEL_RANGE_DOT "tessera_range_dot"

// The execution units tessera_emulate's arithmetic runs on (workload::ComputePipe).
enum TesseraEmulatePipe {
  TESSERA_PIPE_FP32 = 0,         // dependent FP32 FMA chains on registers
  TESSERA_PIPE_TENSOR_FP16 = 1,  // fp16 16x16x16 tensor-core MMAs (fp32 accumulate), per warp
};

// tessera_emulate: stands in for one workload::Kernel on a real GPU (cuda::CudaGpu). Each virtual
// block does the kernel's arithmetic on registers (pipe FP32: fma_per_thread dependent FMAs in
// each thread; pipe TENSOR_FP16: fma_per_thread 16x16x16 MMAs in each full warp; a block's last,
// partial warp does none) and its DRAM traffic as reads and writes of its own slice of a scratch
// buffer larger than L2 (bytes_per_block, a multiple of 32 below 2^37: half read, half written,
// in 16-byte vectors, starting at (bid * bytes_per_block) mod scratch_bytes and wrapping inside
// the buffer, whose size is a power of two),
// with the kernel's block shape (threads per block, dynamic shared memory). With checkpoints > 0
// the block's work (both parts) is cut into checkpoints + 1 equal chunks; before each chunk after
// the first it reads *yield_flag (written by the control kernel) and, when it is set, records the
// chunks it finished in progress[bid], adds one to *yielded_blocks and exits. A block that
// finishes sets progress[bid] = checkpoints + 1. A later launch with the same parameters resumes
// every block from progress[bid]; a block whose progress equals checkpoints + 1 does nothing.
// The host zeroes progress before a kernel's first launch and yielded_blocks before each launch.
typedef struct TesseraEmulateParams {
  uint64_t block_offset;     // first virtual block of this launch
  uint64_t virtual_blocks;   // the kernel's whole grid
  uint64_t scratch;          // device buffer for the DRAM traffic
  uint64_t scratch_bytes;    // its size, a power of two: a block's slice wraps around inside it
  uint64_t bytes_per_block;  // DRAM bytes one block moves (half read, half written)
  uint64_t sink;             // device uint32: written only if an impossible value is computed
  uint64_t yield_flag;       // device uint32 set by the control kernel; 0: never yields
  uint64_t progress;         // device uint32[virtual_blocks]: chunks done; 0 when checkpoints == 0
  uint64_t yielded_blocks;   // device uint32: blocks that stopped early in this launch; 0 if none
  uint32_t fma_per_thread;   // FP32: FMAs per thread; TENSOR_FP16: MMAs per full warp (whole block)
  uint32_t checkpoints;      // 0: runs to its end
  uint32_t pipe;             // TesseraEmulatePipe
  uint32_t reserved;         // 0; keeps the struct a multiple of 8 bytes on every compiler
} TesseraEmulateParams;

// The mailbox of one resident control kernel, in mapped pinned host memory. The host writes op
// and slot, then publishes seq with a release store; the kernel polls seq with system-scope
// acquire loads, carries the command out and acknowledges it with a release store of ack_seq
// (and ack_time_ns, the GPU's %globaltimer when it saw the command).
enum TesseraControlOp {
  TESSERA_CONTROL_NONE = 0,
  TESSERA_CONTROL_YIELD = 1,  // yield_flags[slot] = 1: kernels on that slot stop at a checkpoint
  TESSERA_CONTROL_CLEAR = 2,  // set yield_flags[slot] = 0
  TESSERA_CONTROL_EXIT = 3,   // the control kernel returns
};
typedef struct TesseraControlMailbox {
  uint32_t seq;  // written last by the host
  uint32_t op;   // TesseraControlOp
  uint32_t slot;
  uint32_t ack_seq;  // written by the kernel
  uint64_t ack_time_ns;
} TesseraControlMailbox;

// tessera_control: one thread, resident for the life of a physical context, on a stream of its own
// in that context.
typedef struct TesseraControlParams {
  uint64_t mailbox;      // device pointer of a mapped TesseraControlMailbox
  uint64_t yield_flags;  // device uint32[slots], in device memory: polled by tessera_emulate
  uint32_t slots;
  uint32_t poll_ns;  // __nanosleep between polls
} TesseraControlParams;

// tessera_range_dot: a real, atomizable computation for tests and benchmarks of block ranges:
// out[bid] = sum over i < per_block of x[bid * per_block + i] * w[i], reduced in a fixed order
// that depends only on per_block and the block size, never on the launch's grid.
typedef struct TesseraRangeDotParams {
  uint64_t block_offset;
  uint64_t virtual_blocks;
  uint64_t x;    // float[virtual_blocks * per_block]
  uint64_t w;    // float[per_block]
  uint64_t out;  // float[virtual_blocks]
  uint32_t per_block;
  uint32_t pad;
} TesseraRangeDotParams;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_CUDA_KERNEL_PARAMS_H_
