#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::kGemm: return "gemm";
    case KernelClass::kConv: return "conv";
    case KernelClass::kAttention: return "attention";
    case KernelClass::kNorm: return "norm";
    case KernelClass::kElementwise: return "elementwise";
    case KernelClass::kPointwise: return "pointwise";
    case KernelClass::kReduction: return "reduction";
    case KernelClass::kEmbedding: return "embedding";
    case KernelClass::kSampling: return "sampling";
    case KernelClass::kOptimizer: return "optimizer";
    case KernelClass::kCommunication: return "communication";
    case KernelClass::kOther: return "other";
  }
  return "unknown";
}

std::string_view to_string(ComputePipe p) {
  switch (p) {
    case ComputePipe::kTensorFp16: return "tensor FP16";
    case ComputePipe::kFp32: return "FP32";
    case ComputePipe::kTensorFp8: return "tensor FP8";
    case ComputePipe::kTensorTf32: return "tensor TF32";
  }
  return "unknown";
}

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kUnspecified: return "unspecified";
    case Phase::kPrefill: return "prefill";
    case Phase::kDecode: return "decode";
    case Phase::kTraining: return "training";
  }
  return "unknown";
}

KernelSequencePtr single_kernel(const Kernel& kernel, Phase phase) {
  auto seq = std::make_shared<KernelSequence>();
  seq->groups.push_back(KernelGroup{.kernels = {kernel}, .repeat = 1});
  seq->phase = phase;
  return seq;
}

std::int64_t KernelSequence::kernel_count() const {
  std::int64_t n = 0;
  for (const auto& g : groups) n += static_cast<std::int64_t>(g.kernels.size()) * g.repeat;
  return n;
}

double KernelSequence::total_flops() const {
  double sum = 0;
  for (const auto& g : groups) {
    double group = 0;
    for (const auto& k : g.kernels) group += k.total_flops();
    sum += group * g.repeat;
  }
  return sum;
}

double KernelSequence::total_bytes() const {
  double sum = 0;
  for (const auto& g : groups) {
    double group = 0;
    for (const auto& k : g.kernels) group += k.total_bytes();
    sum += group * g.repeat;
  }
  return sum;
}

}  // namespace tessera::workload
