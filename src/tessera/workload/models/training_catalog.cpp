// The built-in training models, selectable by name from scenarios.

#include <algorithm>
#include <cctype>
#include <string>

#include "tessera/workload/models/training.hpp"

namespace tessera::workload {

namespace {

KernelSequence bert_base_default_length(int batch, Precision precision) {
  return bert_base_iteration(batch, 128, precision);
}

KernelSequence bert_large_default_length(int batch, Precision precision) {
  return bert_large_iteration(batch, 128, precision);
}

KernelSequence resnet50(int batch, Precision precision) {
  return resnet50_iteration(batch, precision);
}

std::vector<TrainingModel> build_catalog() {
  return {
      // Assumption: default per-GPU batches of the size mixed-precision data-parallel training
      // uses on a 40-80 GB GPU (ResNet-50: 256 images; BERT-base phase-1 pre-training: 64
      // sequences of 128 tokens). Scenarios may set their own.
      TrainingModel{.name = "resnet-50",
                    .description = "ResNet-50 v1.5, 224x224 images, SGD with momentum",
                    .default_batch = 256,
                    .iteration = resnet50,
                    .parameters = resnet50_parameters()},
      TrainingModel{.name = "bert-base",
                    .description = "BERT-base pre-training (MLM + NSP), sequence length 128, AdamW",
                    .default_batch = 64,
                    .iteration = bert_base_default_length,
                    .parameters = bert_base_parameters()},
      // Assumption: 32 sequences of 128 tokens, half of BERT-base's for a model with 3x the
      // parameters and 1.3x the width.
      TrainingModel{
          .name = "bert-large",
          .description = "BERT-large pre-training (MLM + NSP), sequence length 128, AdamW",
          .default_batch = 32,
          .iteration = bert_large_default_length,
          .parameters = bert_large_parameters()},
  };
}

}  // namespace

const std::vector<TrainingModel>& training_catalog() {
  static const std::vector<TrainingModel> catalog = build_catalog();
  return catalog;
}

core::Status check_training_precision(Precision precision) {
  if (precision != Precision::kFp8) return {};
  return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                     "a training tenant trains in bf16, fp16, tf32 or fp32; FP8 training "
                     "(Transformer Engine's scaled FP8 GEMMs) is not modelled");
}

bool mixed_precision(Precision precision) {
  return precision == Precision::kBf16 || precision == Precision::kFp16;
}

core::Result<TrainingModel> find_training_model(std::string_view name) {
  std::string key(name);
  std::ranges::transform(key, key.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string known;
  for (const auto& m : training_catalog()) {
    if (m.name == key) return m;
    known += known.empty() ? m.name : ", " + m.name;
  }
  return core::failf(core::Domain::kWorkload, core::Code::kNotFound,
                     "unknown training model '{}'; known models: {}", name, known);
}

}  // namespace tessera::workload
