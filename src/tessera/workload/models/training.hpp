#pragma once
// One training iteration (forward, backward, optimizer step) as a kernel sequence, built from
// layer shapes.

#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/kernels/precision.hpp"

namespace tessera::workload {

struct TrainingModel {
  std::string name;  // "resnet-50", "bert-base"
  std::string description;
  int default_batch;
  // Builds one iteration for `batch` samples (images, or sequences of the model's length) in
  // `precision` (a training precision: check_training_precision).
  KernelSequence (*iteration)(int batch, Precision precision);
  double parameters;
};

const std::vector<TrainingModel>& training_catalog();
core::Result<TrainingModel> find_training_model(std::string_view name);

// The formats a model trains in: bf16 and fp16 (mixed precision: 16-bit activations and weights
// on the tensor cores, an FP32 master copy), tf32 (FP32 storage, TF32 tensor cores for GEMMs,
// PyTorch's allow_tf32) and fp32 (FP32 on the CUDA cores). FP8 training (Transformer Engine's
// scaled FP8 GEMMs) is not modelled: an error naming the formats.
core::Status check_training_precision(Precision precision);
// Mixed precision (bf16, fp16) keeps an FP32 master copy beside 16-bit weights; tf32 and fp32
// train on the FP32 weights.
bool mixed_precision(Precision precision);

// The builders take any batch; a batch below 1 counts as 1. The precision is bf16 unless given.

// 224x224 images, SGD with momentum.
KernelSequence resnet50_iteration(int batch, Precision precision = Precision::kBf16);
double resnet50_parameters();

// Masked-LM and next-sentence pre-training heads, AdamW. seq_len is clamped to [1, 512], the
// range of BERT's learned position embeddings.
KernelSequence bert_base_iteration(int batch, int seq_len = 128,
                                   Precision precision = Precision::kBf16);
double bert_base_parameters();
// The same for BERT-large (24 layers, hidden 1024, 16 heads).
KernelSequence bert_large_iteration(int batch, int seq_len = 128,
                                    Precision precision = Precision::kBf16);
double bert_large_parameters();

}  // namespace tessera::workload
