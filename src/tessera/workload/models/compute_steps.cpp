#include "tessera/workload/models/compute_steps.hpp"

#include <cstdint>
#include <memory>

#include "tessera/workload/kernels/gemm_shapes.hpp"

namespace tessera::workload::compute_steps {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// One of tessera's own kernels: `blocks` blocks of kThreadsPerBlock threads. None of the model
// kernels may be cut into block ranges: each is followed by a checksum over its whole output,
// and the GEMMs are library kernels whose blocks tessera cannot offset.
Kernel own_kernel(std::string_view name, KernelClass kind, std::int64_t blocks, double flops,
                  double bytes, std::int64_t shared_bytes = 0) {
  return Kernel{
      .name = name,
      .kind = kind,
      .pipe = ComputePipe::kFp32,
      .blocks = blocks,
      // 32 registers a thread covers them all: nvcc -Xptxas -v for sm_90 reports 14 to 32 for
      // decode_kernels.cu's kernels; their static shared memory is passed in (ptxas, same run).
      .block = BlockResources{.threads = kThreadsPerBlock,
                              .registers_per_thread = 32,
                              .shared_memory_bytes = shared_bytes},
      .flops_per_block = flops / static_cast<double>(blocks),
      .bytes_per_block = bytes / static_cast<double>(blocks),
      .block_independent = false,
  };
}

// A cuBLASLt GEMM. ASSUMPTION: its grid is what the project's tiling model says
// (gemm_shapes.hpp: 128x128 or, with at most 64 rows, 64x64 tiles, split-K for small grids);
// cuBLASLt's heuristic picks its own kernel (and in the "drift" variant a different one per
// partition), whose grid tessera cannot see.
Kernel library_gemm(std::string_view name, std::int64_t m, std::int64_t n, std::int64_t k,
                    double a_bytes, double b_bytes, double c_bytes) {
  Kernel kernel = make_gemm(GemmDesc{.name = name,
                                     .m = m,
                                     .n = n,
                                     .k = k,
                                     .a_bytes = a_bytes,
                                     .b_bytes = b_bytes,
                                     .c_bytes = c_bytes});
  kernel.block_independent = false;
  return kernel;
}

KernelSequencePtr sequence(std::vector<Kernel> kernels, Phase phase) {
  auto seq = std::make_shared<KernelSequence>();
  seq->groups.push_back(KernelGroup{.kernels = std::move(kernels), .repeat = 1});
  seq->phase = phase;
  return seq;
}

}  // namespace

KernelSequencePtr decode_step_sequence(const compute_data::DecodeShape& shape) {
  const auto b = static_cast<std::int64_t>(shape.batch);
  const auto h = static_cast<std::int64_t>(shape.hidden);
  const auto v = static_cast<std::int64_t>(shape.vocab);
  const double fp16 = 2;
  const double fp32 = 4;
  const double db = static_cast<double>(b);
  const double dh = static_cast<double>(h);
  const double dv = static_cast<double>(v);
  std::vector<Kernel> kernels;
  // One block per sequence copies its token's row of the embedding table.
  kernels.push_back(own_kernel(kDecodeEmbed, KernelClass::kEmbedding, b, 0,
                               db * (2 * dh * fp16 + sizeof(std::int32_t))));
  // logits[V x B] = W^T[V x H] * h[H x B]; described with the batch as the GEMM's rows, the
  // skinny side, as the tiling model expects (the same FLOPs and operands).
  kernels.push_back(
      library_gemm(kDecodeLmHead, b, v, h, db * dh * fp16, dv * dh * fp16, dv * db * fp32));
  // One block per sequence: a max pass and a sum-of-exp pass reading the logits, a pass writing
  // the probabilities (exp, subtract, divide: about 5 operations an element).
  kernels.push_back(
      own_kernel(kDecodeSoftmax, KernelClass::kNorm, b, 5 * dv * db, db * dv * fp32 * 4));
  // One block per sequence scans its probabilities once.
  kernels.push_back(own_kernel(kDecodeArgmax, KernelClass::kSampling, b, dv * db,
                               db * (dv * fp32 + sizeof(std::int32_t)), kThreadsPerBlock * 8));
  return sequence(std::move(kernels), Phase::kDecode);
}

KernelSequencePtr train_step_sequence(const compute_data::TrainShape& shape) {
  const auto m = static_cast<std::int64_t>(shape.m);
  const auto n = static_cast<std::int64_t>(shape.n);
  const auto k = static_cast<std::int64_t>(shape.k);
  const double dm = static_cast<double>(m);
  const double dn = static_cast<double>(n);
  const double dk = static_cast<double>(k);
  std::vector<Kernel> kernels;
  kernels.push_back(library_gemm(kTrainGemm, m, n, k, dm * dk * 2, dk * dn * 2, dm * dn * 4));
  // A block per kReduceRowsPerBlock rows of C; each row's N squares summed in a fixed order.
  kernels.push_back(own_kernel(kTrainReduce, KernelClass::kReduction,
                               ceil_div(m, kReduceRowsPerBlock), 2 * dm * dn, dm * dn * 4 + dm * 4,
                               kThreadsPerBlock * 4));
  // One thread per element of B: reads B, C and the row's sum, writes B (about 6 operations).
  kernels.push_back(own_kernel(kTrainUpdate, KernelClass::kOptimizer,
                               ceil_div(k * n, kThreadsPerBlock), 6 * dk * dn,
                               dk * dn * (2 + 4 + 2)));
  return sequence(std::move(kernels), Phase::kTraining);
}

}  // namespace tessera::workload::compute_steps
