#include "tessera/workload/kernels/optimizer.hpp"

#include <cmath>
#include <cstdint>

#include "tessera/workload/kernels/memory_bound.hpp"

namespace tessera::workload {

namespace {

// PyTorch aten/src/ATen/native/cuda/MultiTensorApply.cuh: kChunkSize 65536, kBlockSize 512.
constexpr double kChunkElements = 65536;
constexpr int kBlockThreads = 512;

// Bytes per parameter: FP32 master weight read and written (8), FP16 gradient read (2), FP16
// weight copy written (2), plus FP32 optimizer state read and written (8 per state tensor).
constexpr double kSharedBytesPerParam = 8 + 2 + 2;
constexpr double kStateBytesPerParam = 8;

// Assumption: arithmetic per parameter, counted from the update rules. SGD: weight decay,
// momentum and update, a multiply-add each. AdamW: two moment updates, bias corrections,
// square root, divide, decoupled decay and update.
constexpr double kSgdFlopsPerParam = 6;
constexpr double kAdamWFlopsPerParam = 15;

Kernel multi_tensor_step(std::string_view name, double parameters, int state_tensors,
                         double flops_per_param) {
  const auto blocks = static_cast<std::int64_t>(std::ceil(parameters / kChunkElements));
  return memory_bound({
      .name = name,
      .kind = KernelClass::kOptimizer,
      .blocks = blocks,
      .threads = kBlockThreads,
      .flops = flops_per_param * parameters,
      .bytes = (kSharedBytesPerParam + state_tensors * kStateBytesPerParam) * parameters,
  });
}

}  // namespace

Kernel sgd_momentum_step(double parameters) {
  return multi_tensor_step("sgd_momentum_step", parameters, 1, kSgdFlopsPerParam);
}

Kernel adamw_step(double parameters) {
  return multi_tensor_step("adamw_step", parameters, 2, kAdamWFlopsPerParam);
}

}  // namespace tessera::workload
