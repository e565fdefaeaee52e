#pragma once
// A kernel as the simulated GPU sees it: a grid of identical thread blocks, each with a cost
// (FLOPs, DRAM bytes) and a resource footprint (threads, registers, shared memory) that fixes how
// many blocks fit on one SM. Launch configuration is immutable once built: policies may choose
// where and when a kernel runs, never how its grid is shaped.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace tessera::workload {

// kElementwise: a fused per-row kernel (a norm, rotary embedding, activation-and-multiply);
// kPointwise: one flat pass over contiguous tensors (PyTorch's vectorized elementwise kernels: a
// residual add, a cast, a copy); kEmbedding: a gather of table rows by index.
enum class KernelClass {
  kGemm,
  kConv,
  kAttention,
  kNorm,
  kElementwise,
  kPointwise,
  kReduction,
  kEmbedding,
  kSampling,
  kOptimizer,
  kCommunication,
  kOther,
};
inline constexpr std::size_t kKernelClasses = static_cast<std::size_t>(KernelClass::kOther) + 1;
std::string_view to_string(KernelClass c);

// Which execution units bound the block's arithmetic: the tensor cores in one of their formats
// (FP16 covers BF16), or the FP32 CUDA cores.
enum class ComputePipe { kTensorFp16, kFp32, kTensorFp8, kTensorTf32 };
std::string_view to_string(ComputePipe p);

struct BlockResources {
  int threads = 256;
  int registers_per_thread = 64;
  std::int64_t shared_memory_bytes = 0;
};

// The problem a GEMM kernel solves. A library (cuBLAS, CUTLASS) picks its tiling per call for the
// device and the SMs it gets, so a simulator may time the problem as that choice rather than the
// builder's grid. m = 0: the kernel is no GEMM.
struct GemmProblem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  double operand_bytes = 0;  // DRAM traffic of A, B and C, without split-K partial sums
  // Independent GEMMs of this shape in one launch (a grouped GEMM: a mixture of experts' experts,
  // each with its own weights); their tiles share the grid.
  std::int64_t groups = 1;
};

struct Kernel {
  std::string_view name{};  // points at a string literal: kernels are built in hot loops
  KernelClass kind = KernelClass::kOther;
  ComputePipe pipe = ComputePipe::kFp32;
  std::int64_t blocks = 1;  // grid size
  BlockResources block{};
  double flops_per_block = 0;  // arithmetic work of one block
  double bytes_per_block = 0;  // DRAM traffic of one block (reads + writes)
  // True when blocks neither synchronise grid-wide nor depend on each other, so the grid may be
  // split into block ranges. Kernels with cooperative launch or cross-block reductions say false.
  bool block_independent = true;
  // Persistent kernels loop over work tiles and poll a preemption flag between them: this many
  // evenly spaced checkpoints where the kernel can stop and later resume (CoGPU's resident
  // control kernel raises the flag). 0: the kernel cannot be preempted and runs to its end.
  int checkpoints = 0;
  // Traffic over the host link, for GPUs that reach their peers only through host memory (PCIe
  // without NVLink or peer-to-peer: a tensor-parallel all-reduce on RTX 4090 servers,
  // workload/tensor_parallel.hpp). Bytes per block, and the rate the link gives this kernel
  // (any topology penalty already applied). The simulated GPU adds bytes / rate to the kernel's
  // time, after its compute and DRAM part. 0 bytes (the default): no host traffic.
  double host_link_bytes_per_block = 0;
  double host_link_bytes_per_s = 0;
  // Sequential steps of a collective over the link (a ring all-reduce of n GPUs takes 2(n-1),
  // a gather n-1, a send 1): each pays the protocol's latency (SimGpuOptions::collective_latency).
  int link_steps = 0;
  GemmProblem gemm{};  // set by make_gemm (gemm_shapes.hpp)

  double total_flops() const { return flops_per_block * static_cast<double>(blocks); }
  double total_bytes() const { return bytes_per_block * static_cast<double>(blocks); }
  double total_host_link_bytes() const {
    return host_link_bytes_per_block * static_cast<double>(blocks);
  }
};

// Kernels that run back to back in one stream. A group is repeated `repeat` times (a decoder's
// identical layers), which keeps a 32-layer step at one layer's worth of descriptors.
struct KernelGroup {
  std::vector<Kernel> kernels;
  int repeat = 1;
};

// What a submission is, for policies that treat phases differently (CoGPU's TPOT-first).
enum class Phase { kUnspecified, kPrefill, kDecode, kTraining };
std::string_view to_string(Phase p);

struct KernelSequence {
  std::vector<KernelGroup> groups;
  Phase phase = Phase::kUnspecified;
  // Captured as a CUDA graph: the host launches all its kernels in one call (cudaGraphLaunch),
  // not one by one.
  bool graph = false;
  // A serving step with requests mid-generation while it runs, waiting for their next token: every
  // decode step, and a prefill that pauses running requests (continuous batching).
  bool mid_generation = false;

  std::int64_t kernel_count() const;
  double total_flops() const;
  double total_bytes() const;
};

using KernelSequencePtr = std::shared_ptr<const KernelSequence>;

// A position in a kernel sequence (group, repetition of the group, kernel within it), walked in
// launch order by every backend. Empty groups are skipped. Inline: backends step it per kernel.
struct SequenceCursor {
  std::uint32_t group = 0;
  std::int32_t rep = 0;
  std::uint32_t index = 0;

  // The first kernel of `seq` (at groups.size() when it has none).
  static SequenceCursor first(const KernelSequence& seq) {
    SequenceCursor c;
    while (c.group < seq.groups.size() && seq.groups[c.group].kernels.empty()) ++c.group;
    return c;
  }
  // Moves to the next kernel; false when there is none.
  bool advance(const KernelSequence& seq) {
    if (++index < seq.groups[group].kernels.size()) return true;
    index = 0;
    if (++rep < seq.groups[group].repeat) return true;
    rep = 0;
    do {
      ++group;
    } while (group < seq.groups.size() && seq.groups[group].kernels.empty());
    return group < seq.groups.size();
  }
  const Kernel& kernel(const KernelSequence& seq) const { return seq.groups[group].kernels[index]; }
  bool operator==(const SequenceCursor&) const = default;
};

// Kernels of `seq` from `from` (a kernel of it, or past its end) to its end, in launch order; 0
// when `from` is past it.
std::int64_t kernels_from(const KernelSequence& seq, const SequenceCursor& from);
// A sequence of `count` kernels of `seq` from `from` on, with its phase and flags (the kernels
// copied; repeated layers stay one group). Needs 0 < count <= kernels_from(seq, from); a larger
// count stops at the sequence's end.
KernelSequencePtr span_of(const KernelSequence& seq, const SequenceCursor& from,
                          std::int64_t count);

// A sequence of just `kernel`, for schedulers that launch kernel by kernel.
KernelSequencePtr single_kernel(const Kernel& kernel, Phase phase = Phase::kUnspecified);

}  // namespace tessera::workload
