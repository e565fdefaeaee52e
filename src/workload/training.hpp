#pragma once
// One training iteration (forward, backward, optimizer step) as a kernel sequence, built from
// layer shapes.

#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernel.hpp"

namespace tessera::workload {

struct TrainingModel {
  std::string name;        // "resnet-50", "bert-base"
  std::string description;
  int default_batch;
  // Builds one iteration for `batch` samples (images, or sequences of the model's length).
  KernelSequence (*iteration)(int batch);
  double parameters;
};

const std::vector<TrainingModel>& training_catalog();
core::Result<TrainingModel> find_training_model(std::string_view name);

KernelSequence resnet50_iteration(int batch);  // 224x224 images, SGD with momentum
KernelSequence bert_base_iteration(int batch, int seq_len = 128);  // AdamW

}  // namespace tessera::workload
