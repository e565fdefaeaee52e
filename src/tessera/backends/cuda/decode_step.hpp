#pragma once
// The compute models on a real GPU (workload::ComputeModel): the decode step of a small
// language model (embedding, LM-head GEMM through cuBLASLt, softmax, greedy argmax) and a
// GEMM-plus-reduction training-like step, both over tessera's kernels
// (kernels/decode_kernels.cu) and cuBLASLt (lt_gemm.hpp), with the shapes, data, layouts and
// checksums of workload/compute_data.hpp and the kernel sequences of workload/compute_steps.hpp
// (the host reference, experiment/determinism_reference.hpp, follows the same).
//
// Device buffers, the kernels' module, the cuBLASLt handle and the GEMM's algorithm (the "fixed"
// variant's) are made at creation, in the device's primary context. run_kernel enqueues the
// kernel's work, and a checksum of its output into the step's slot, on site.stream only, with no
// synchronisation: the caller (CudaGpu's payload) has the stream's context current and orders the
// step's kernels. finish_step waits for the last stream used, copies the checksums (and tokens)
// back and moves to the next step.

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/backends/cuda/cublaslt_library.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/lt_gemm.hpp"
#include "tessera/core/error.hpp"
#include "tessera/workload/models/compute_data.hpp"
#include "tessera/workload/models/compute_model.hpp"

namespace tessera::cuda {

// The embedded fatbin of kernels/decode_kernels.cu.
std::span<const unsigned char> decode_kernels_image();

struct DecodeModelOptions {
  int device_ordinal = 0;
  workload::compute_data::DecodeShape shape{};
  GemmOptions gemm{};
  std::uint64_t seed = 0;  // the data reset() loads at creation
};
// Shapes the model can run: batch, hidden and vocab positive, batch <= vocab (the first step's
// tokens are 0..batch-1), buffers within 32-bit element counts per row.
core::Status validate(const DecodeModelOptions& options);

struct TrainingModelOptions {
  int device_ordinal = 0;
  workload::compute_data::TrainShape shape{};
  // The training-like load is not compared by the harness: by default cuBLASLt's own choice for
  // the whole device (SM target 0), reductions allowed only as the fixed variant allows.
  GemmOptions gemm{.variant = GemmVariant::kFixed, .sm_count_target = 0};
  float learning_rate = 1e-3f;  // the update's step (decode_kernels.h, tessera_train_update)
  // Checksums of the training kernels' outputs. Off by default: the second level of the checksum
  // is one serial FNV chain over 8 bytes per KiB, about 1.6 ms for the default 16 MiB C on one
  // thread (an estimate: ~25 cycles a byte at ~2 GHz), longer than the GEMM it would follow.
  bool checksums = false;
  std::uint64_t seed = 0;
};
core::Status validate(const TrainingModelOptions& options);

// Device memory, the module, the cuBLASLt handle and the primary context a model holds.
class ModelResources;

class CudaDecodeModel final : public workload::ComputeModel {
 public:
  static core::Result<std::unique_ptr<CudaDecodeModel>> create(const DriverLibrary& driver,
                                                               const CublasLt& lt,
                                                               const DecodeModelOptions& options);
  ~CudaDecodeModel() override;

  std::string_view name() const override { return "decode"; }
  core::Status reset(std::uint64_t seed) override;
  workload::KernelSequencePtr step_sequence() const override { return sequence_; }
  core::Status run_kernel(std::string_view kernel, const workload::ComputeSite& site) override;
  core::Result<workload::StepOutput> finish_step() override;

  std::int64_t step() const { return step_; }
  const DecodeModelOptions& options() const { return options_; }
  // The LM head's algorithms by partition size (the report's "algorithms seen").
  std::vector<GemmAlgorithmsSeen> algorithms_seen() const { return gemm_->algorithms_seen(); }
  const GemmAlgorithm& gemm_algorithm() const { return gemm_->last_algorithm(); }
  // The current step's logits (B rows of V, compute_data.hpp), after its LM head ran: waits for
  // the last stream used. For tests and diagnostics.
  core::Result<std::vector<float>> read_logits();

 private:
  CudaDecodeModel(DecodeModelOptions options, std::unique_ptr<ModelResources> resources);
  DecodeModelOptions options_;
  std::unique_ptr<ModelResources> res_;
  std::unique_ptr<LtGemm> gemm_;
  workload::KernelSequencePtr sequence_;
  std::int64_t step_ = 0;
  int next_kernel_ = 0;  // index into the step's kernels of the next one to run
  // Device buffers (compute_data.hpp's layouts), owned by res_.
  CUdeviceptr table_ = 0;    // E
  CUdeviceptr lm_head_ = 0;  // W
  CUdeviceptr tokens_ = 0;
  CUdeviceptr hidden_ = 0;
  CUdeviceptr logits_ = 0;
  CUdeviceptr probs_ = 0;
  std::optional<std::uint64_t> loaded_seed_;  // the seed E and W hold
};

class CudaTrainingModel final : public workload::ComputeModel {
 public:
  static core::Result<std::unique_ptr<CudaTrainingModel>> create(
      const DriverLibrary& driver, const CublasLt& lt, const TrainingModelOptions& options);
  ~CudaTrainingModel() override;

  std::string_view name() const override { return "train"; }
  core::Status reset(std::uint64_t seed) override;
  workload::KernelSequencePtr step_sequence() const override { return sequence_; }
  core::Status run_kernel(std::string_view kernel, const workload::ComputeSite& site) override;
  core::Result<workload::StepOutput> finish_step() override;

  std::int64_t step() const { return step_; }
  const TrainingModelOptions& options() const { return options_; }
  std::vector<GemmAlgorithmsSeen> algorithms_seen() const { return gemm_->algorithms_seen(); }

 private:
  CudaTrainingModel(TrainingModelOptions options, std::unique_ptr<ModelResources> resources);
  TrainingModelOptions options_;
  std::unique_ptr<ModelResources> res_;
  std::unique_ptr<LtGemm> gemm_;
  workload::KernelSequencePtr sequence_;
  std::int64_t step_ = 0;
  int next_kernel_ = 0;
  CUdeviceptr a_ = 0;                         // fp16 [m x k]
  CUdeviceptr b_ = 0;                         // fp16 [k x n], updated every step
  CUdeviceptr c_ = 0;                         // fp32 [m x n]
  CUdeviceptr row_sq_ = 0;                    // fp32 [m]
  std::optional<std::uint64_t> loaded_seed_;  // the seed A holds
};

}  // namespace tessera::cuda
