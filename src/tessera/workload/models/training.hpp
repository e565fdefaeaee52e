#pragma once
// One training iteration (forward, backward, optimizer step) as a kernel sequence, built from
// layer shapes.

#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

struct TrainingModel {
  std::string name;  // "resnet-50", "bert-base"
  std::string description;
  int default_batch;
  // Builds one iteration for `batch` samples (images, or sequences of the model's length).
  KernelSequence (*iteration)(int batch);
  double parameters;
};

const std::vector<TrainingModel>& training_catalog();
core::Result<TrainingModel> find_training_model(std::string_view name);

// The builders take any batch; a batch below 1 counts as 1.

// 224x224 images, SGD with momentum.
KernelSequence resnet50_iteration(int batch);
double resnet50_parameters();

// Masked-LM and next-sentence pre-training heads, AdamW. seq_len is clamped to [1, 512], the
// range of BERT's learned position embeddings.
KernelSequence bert_base_iteration(int batch, int seq_len = 128);
double bert_base_parameters();
// The same for BERT-large (24 layers, hidden 1024, 16 heads).
KernelSequence bert_large_iteration(int batch, int seq_len = 128);
double bert_large_parameters();

}  // namespace tessera::workload
