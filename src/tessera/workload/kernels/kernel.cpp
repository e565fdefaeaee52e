#include "tessera/workload/kernels/kernel.hpp"

#include <algorithm>

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

std::int64_t kernels_from(const KernelSequence& seq, const SequenceCursor& from) {
  if (from.group >= seq.groups.size()) return 0;
  const auto& here = seq.groups[from.group];
  const auto size = static_cast<std::int64_t>(here.kernels.size());
  std::int64_t n = size - from.index + size * (here.repeat - from.rep - 1);
  for (std::size_t g = from.group + 1; g < seq.groups.size(); ++g) {
    n += static_cast<std::int64_t>(seq.groups[g].kernels.size()) * seq.groups[g].repeat;
  }
  return n;
}

KernelSequencePtr span_of(const KernelSequence& seq, const SequenceCursor& from,
                          std::int64_t count) {
  auto out = std::make_shared<KernelSequence>();
  out->phase = seq.phase;
  out->graph = seq.graph;
  out->mid_generation = seq.mid_generation;
  SequenceCursor c = from;
  for (std::int64_t left = count; left > 0 && c.group < seq.groups.size();) {
    const auto& g = seq.groups[c.group];
    const auto size = static_cast<std::int64_t>(g.kernels.size());
    if (c.index > 0 || left < size) {  // part of one repetition
      const std::int64_t take = std::min(size - c.index, left);
      const auto first = g.kernels.begin() + c.index;
      out->groups.push_back(KernelGroup{.kernels = {first, first + take}, .repeat = 1});
      left -= take;
      c.index += static_cast<std::uint32_t>(take - 1);
      c.advance(seq);
      continue;
    }
    const auto reps = static_cast<int>(std::min<std::int64_t>(g.repeat - c.rep, left / size));
    out->groups.push_back(KernelGroup{.kernels = g.kernels, .repeat = reps});
    left -= reps * size;
    c.rep += reps - 1;
    c.index = static_cast<std::uint32_t>(size - 1);
    c.advance(seq);
  }
  return out;
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
