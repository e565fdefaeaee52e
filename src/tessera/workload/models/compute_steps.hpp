#pragma once
// The kernel sequences of the compute models' steps, as policies see them: pure
// functions of the shapes, shared by the CUDA models (src/tessera/backends/cuda/decode_step.hpp)
// and the host reference (src/tessera/experiment/determinism_reference.hpp) so both describe the
// same launches. Each kernel's grid and block shape are the real launch's (tessera's kernels in
// src/tessera/backends/cuda/kernels/decode_kernels.cu; for the cuBLASLt GEMMs an estimate, see the
// .cpp); FLOPs and bytes follow from the shapes.

#include <string_view>

#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/models/compute_data.hpp"

namespace tessera::workload::compute_steps {

// Kernel names, in launch order (they bind payloads: unique within a model, string literals).
inline constexpr std::string_view kDecodeEmbed = "decode.embed";
inline constexpr std::string_view kDecodeLmHead = "decode.lm_head";
inline constexpr std::string_view kDecodeSoftmax = "decode.softmax";
inline constexpr std::string_view kDecodeArgmax = "decode.argmax";
inline constexpr std::string_view kTrainGemm = "train.gemm";
inline constexpr std::string_view kTrainReduce = "train.reduce";
inline constexpr std::string_view kTrainUpdate = "train.update";

// Threads per block of tessera's own model kernels (decode_kernels.cu launches exactly this).
inline constexpr int kThreadsPerBlock = 256;
// train.reduce: a block covers this many rows of C (a warp's lanes; the block's 8 warps take
// interleaved columns), so loads of a column are coalesced.
inline constexpr int kReduceRowsPerBlock = 32;

// embed, lm_head, softmax, argmax; Phase::kDecode.
KernelSequencePtr decode_step_sequence(const compute_data::DecodeShape& shape);
// gemm, reduce, update; Phase::kTraining.
KernelSequencePtr train_step_sequence(const compute_data::TrainShape& shape);

}  // namespace tessera::workload::compute_steps
