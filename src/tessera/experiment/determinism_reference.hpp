#pragma once
// The host reference of the decode model: workload::ComputeModel computed in C++ on the
// CPU, with the shapes, kernel names, data and step semantics of the CUDA model
// (src/tessera/backends/cuda/decode_step.hpp; the shared facts are
// src/tessera/workload/models/compute_data.hpp and compute_steps.hpp), so the determinism harness
// runs on the simulated GPU too.
//
// What it models. The LM-head GEMM multiplies fp16 values in fp32; every product of two of the
// generator's values is exact in fp32 (compute_data.hpp: 11 significant bits each), so only the
// order of the fp32 additions decides the result's bits:
//  - variant "fixed": each output is one running sum over k = 0..H-1, whatever the partition;
//  - variant "drift": a model of a GEMM whose algorithm follows the SM count (cuBLASLt's heuristic
//    choosing split-K for a smaller or larger grid): K is cut into splits = max(1, partition_sms /
//    sms_per_split) contiguous chunks, each summed in order, and the partial sums are added in
//    chunk order. A different partition size thus gives different bits. This is a model of the
//    mechanism, not of what cuBLASLt does on a given GPU: on the simulator the harness shows that
//    it works and how drift would surface, never what a GPU does.
// The other kernels are fixed-order on every partition: softmax per sequence (max, then the sum of
// exp(x - max) in index order, then each exp divided by the sum), argmax per sequence with the
// lowest index winning ties.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/models/compute_data.hpp"
#include "tessera/workload/models/compute_model.hpp"

namespace tessera::experiment {

// How the decode step's GEMM chooses its reduction order.
enum class GemmVariant { kFixed, kDrift };
std::string_view to_string(GemmVariant v);

struct HostDecodeOptions {
  workload::compute_data::DecodeShape shape{};
  GemmVariant variant = GemmVariant::kFixed;
  // "drift": SMs per K split. ASSUMPTION: 16, so the harness's default partitions (16, 32, 64
  // SMs) and a whole H100 (132) give 1, 2, 4 and 8 splits: each a different summation order.
  int sms_per_split = 16;
};

class HostDecodeModel final : public workload::ComputeModel {
 public:
  // Fails on a shape or option that is not positive.
  static core::Result<std::unique_ptr<HostDecodeModel>> create(const HostDecodeOptions& options);

  std::string_view name() const override { return "decode"; }
  core::Status reset(std::uint64_t seed) override;
  workload::KernelSequencePtr step_sequence() const override { return sequence_; }
  core::Status run_kernel(std::string_view kernel, const workload::ComputeSite& site) override;
  core::Result<workload::StepOutput> finish_step() override;

  // K splits the LM head uses on a partition of `partition_sms` SMs (1 for "fixed").
  int gemm_splits(int partition_sms) const;

 private:
  explicit HostDecodeModel(const HostDecodeOptions& options);
  void embed();
  void lm_head(int partition_sms);
  void softmax();
  void argmax();

  HostDecodeOptions options_;
  workload::KernelSequencePtr sequence_;
  std::vector<std::string_view> kernel_order_;
  bool seeded_ = false;
  std::size_t next_kernel_ = 0;  // index into kernel_order_ of the next kernel of this step
  // Weights as fp32 (exact conversions of the fp16 data); the LM head transposed to H x V
  // (w_t_[i * V + v]) so that the inner loop runs over v and each output still sums k in order.
  std::vector<std::uint16_t> embedding_;  // V x H fp16, as generated
  std::vector<float> w_t_;
  std::vector<std::int32_t> tokens_;       // B, the step's input
  std::vector<std::uint16_t> hidden_;      // B x H fp16
  std::vector<float> logits_;              // B x V
  std::vector<float> probs_;               // B x V
  std::vector<std::int32_t> next_tokens_;  // B
  std::vector<std::uint64_t> checksums_;   // per kernel of the step, in launch order
};

}  // namespace tessera::experiment
