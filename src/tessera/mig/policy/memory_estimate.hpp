#pragma once
// Static memory estimates, before a job runs (MIGM §3.2.2, in the spirit of DNNMem): what a DNN
// training or inference job holds on the GPU, from model size, batch and optimizer, broken into
// the parts a user can check. Each coefficient names its source in memory_estimate.cpp.

#include <cstdint>
#include <string>

#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::mig {

struct MemoryBreakdown {
  std::int64_t weights = 0;
  std::int64_t gradients = 0;
  std::int64_t optimizer_state = 0;  // incl. FP32 master weights under mixed precision
  std::int64_t activations = 0;      // saved for backward (training) or live (inference)
  std::int64_t kv_cache = 0;
  std::int64_t workspace = 0;          // library workspaces (cuBLAS) and temporaries
  std::int64_t framework_context = 0;  // CUDA context and framework runtime on the device
  std::int64_t total() const;
  // "weights 14.96 GiB + activations 2.0 MiB + ... = total 17.48 GiB": every nonzero part, in
  // GiB from 1 GiB up and in MiB below.
  std::string describe() const;
};

enum class Optimizer { kSgd, kSgdMomentum, kAdam };

struct TrainingMemoryInput {
  double parameters = 0;
  int batch = 1;
  Optimizer optimizer = Optimizer::kAdam;
  bool mixed_precision = true;             // FP16/BF16 weights and activations, FP32 master copy
  double activation_bytes_per_sample = 0;  // saved activations of one sample, at training precision
};
MemoryBreakdown estimate_training(const TrainingMemoryInput& in);

// Saved activations per sample of the built-in training models (workload::training_catalog()),
// by name; 0 for an unknown name.
double activation_bytes_per_sample(std::string_view training_model, int seq_len = 128);

// The built-in models' own optimizers (training_catalog.cpp's descriptions): SGD with momentum
// for ResNet-50, Adam(W) for the others.
Optimizer default_optimizer(const workload::TrainingModel& m);
// A built-in training model at `batch` with `optimizer`, in `precision`: mixed precision (bf16,
// fp16) or FP32 weights (tf32, fp32), activations saved at the precision's element size.
MemoryBreakdown estimate_training(const workload::TrainingModel& m, int batch, Optimizer optimizer,
                                  workload::Precision precision = workload::Precision::kBf16);

// A decoder-only model serving `batch` sequences whose context reaches `context_tokens`.
MemoryBreakdown estimate_inference(const workload::ModelConfig& m, int batch,
                                   std::int64_t context_tokens);

}  // namespace tessera::mig
