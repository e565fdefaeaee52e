#include "tessera/cli/kernel_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "tessera/core/try.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/validation/limits.hpp"
#include "tessera/validation/measurement.hpp"
#include "tessera/validation/predict.hpp"
#include "tessera/workload/kernels/memory_bound.hpp"
#include "tessera/workload/kernels/precision.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::cli {

namespace {

core::Result<workload::Precision> precision_of(const std::string& text) {
  if (const auto p = workload::parse_precision(text)) return *p;
  return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                     "--dtype '{}': expected fp8, bf16, fp16, tf32 or fp32", text);
}

core::Result<validation::Measurement> measurement_for(const KernelFlags& f) {
  validation::Measurement m;
  m.source = "command line";
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(f.gpu));
  m.gpu = spec.name;
  TESSERA_ASSIGN_OR_RETURN(m.precision, precision_of(f.dtype));
  if (f.step->parsed()) {
    m.kind = validation::MeasuredKind::kStep;
    TESSERA_ASSIGN_OR_RETURN(m.model, workload::find_model(f.model));
    m.model.precision = m.precision;
    TESSERA_TRY(m.model.validate());
    m.tensor_parallel = f.tp;
  } else if (f.gemm->parsed()) {
    m.kind = validation::MeasuredKind::kGemm;
    m.m = f.m;
    m.n = f.n;
    m.k = f.k;
    return m;
  }
  if (f.attention->parsed()) {
    m.kind = validation::MeasuredKind::kLayerKernels;
    m.model = validation::attention_model("attention", f.heads, f.kv_heads, f.head_dim);
    m.tensor_parallel = f.tp;
    m.layer_kernels = {std::string(validation::kAttentionKernels)};
  }
  if (f.phase == "prefill") {
    m.phase = workload::Phase::kPrefill;
    m.lengths.assign(static_cast<std::size_t>(f.batch), f.seq_len);
  } else if (f.phase == "decode") {
    m.phase = workload::Phase::kDecode;
    m.lengths.assign(static_cast<std::size_t>(f.batch), f.kv_len);
  } else {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--phase '{}': expected prefill or decode", f.phase);
  }
  return m;
}

workload::KernelSequence memcpy_sequence(std::int64_t bytes) {
  workload::KernelSequence seq;
  // A device-to-device copy as a vectorised elementwise kernel: every byte read and written once.
  seq.groups.push_back(
      {.kernels = {workload::memory_bound(
           {.name = "memcpy_d2d",
            .kind = workload::KernelClass::kOther,
            .blocks = workload::elementwise_blocks(std::max<std::int64_t>(bytes / 4, 1)),
            .bytes = 2 * static_cast<double>(bytes)})},
       .repeat = 1});
  return seq;
}

}  // namespace

void add_kernel_options(CLI::App& command, KernelFlags& f) {
  command.require_subcommand(1);
  const auto add_gpu = [&](CLI::App* app) {
    app->add_option("--gpu", f.gpu, "GPU from the catalog (`tessera list`), e.g. h100, a100-80gb")
        ->capture_default_str();
  };
  f.gemm = command.add_subcommand("gemm", "C[m,n] = A[m,k] x B[k,n] as the builders tile it");
  f.gemm->add_option("--m", f.m, "Rows of A and C (tokens)")
      ->check(CLI::Range(std::int64_t{1}, validation::kMaxGemmDim))
      ->capture_default_str();
  f.gemm->add_option("--n", f.n, "Columns of B and C")
      ->check(CLI::Range(std::int64_t{1}, validation::kMaxGemmDim))
      ->capture_default_str();
  f.gemm->add_option("--k", f.k, "Inner dimension")
      ->check(CLI::Range(std::int64_t{1}, validation::kMaxGemmDim))
      ->capture_default_str();
  f.gemm->add_option("--dtype", f.dtype, "fp8, bf16, fp16, tf32 or fp32")->capture_default_str();
  const auto add_stream_k = [&](CLI::App* app) {
    app->add_flag("--stream-k", f.stream_k,
                  "Time GEMMs as a library with Stream-K kernels does (no wave staircase; "
                  "sim option gemm_stream_k)");
  };
  add_gpu(f.gemm);
  add_stream_k(f.gemm);

  f.attention = command.add_subcommand(
      "attention", "FlashAttention prefill of causal prompts, or paged decode attention");
  f.attention->add_option("--phase", f.phase, "prefill or decode")->capture_default_str();
  f.attention->add_option("--heads", f.heads, "Query heads of the whole model")
      ->check(CLI::Range(1, validation::kMaxHeads))
      ->capture_default_str();
  f.attention->add_option("--kv-heads", f.kv_heads, "Key/value heads of the whole model")
      ->check(CLI::Range(1, validation::kMaxHeads))
      ->capture_default_str();
  f.attention->add_option("--head-dim", f.head_dim, "Head dimension")
      ->check(CLI::Range(1, validation::kMaxHeads))
      ->capture_default_str();
  f.attention->add_option("--batch", f.batch, "Sequences")
      ->check(CLI::Range(1, validation::kMaxBatch))
      ->capture_default_str();
  f.attention->add_option("--seq-len", f.seq_len, "Prompt length of each sequence (prefill)")
      ->check(CLI::Range(1, validation::kMaxTokens))
      ->capture_default_str();
  f.attention->add_option("--kv-len", f.kv_len, "Cached tokens of each sequence (decode)")
      ->check(CLI::Range(0, validation::kMaxTokens))
      ->capture_default_str();
  f.attention->add_option("--tp", f.tp, "Tensor-parallel degree: one GPU's share of the heads")
      ->check(CLI::Range(1, validation::kMaxTensorParallel))
      ->capture_default_str();
  add_gpu(f.attention);

  f.memcpy = command.add_subcommand("memcpy", "A device-to-device copy of --bytes");
  f.memcpy->add_option("--bytes", f.bytes, "Bytes copied")
      ->check(CLI::Range(std::int64_t{1}, validation::kMaxCollectiveBytes))
      ->capture_default_str();
  add_gpu(f.memcpy);

  f.step = command.add_subcommand(
      "step", "A whole prefill or decode step of a catalog model, its kernels summed by name");
  f.step->add_option("--model", f.model, "Catalog model (`tessera list`)")->capture_default_str();
  f.step->add_option("--phase", f.phase, "prefill or decode")->capture_default_str();
  f.step->add_option("--batch", f.batch, "Sequences")
      ->check(CLI::Range(1, validation::kMaxBatch))
      ->capture_default_str();
  f.step->add_option("--seq-len", f.seq_len, "Prompt length of each sequence (prefill)")
      ->check(CLI::Range(1, validation::kMaxTokens))
      ->capture_default_str();
  f.step->add_option("--kv-len", f.kv_len, "Cached tokens of each sequence (decode)")
      ->check(CLI::Range(0, validation::kMaxTokens))
      ->capture_default_str();
  f.step
      ->add_option("--dtype", f.dtype,
                   "The linear layers' format: bf16, fp16, or fp8 (vLLM's W8A8: FP8 weights, "
                   "activations quantized per token)")
      ->capture_default_str();
  f.step->add_option("--tp", f.tp, "Tensor-parallel degree over NVLink (one GPU's kernels)")
      ->check(CLI::Range(1, validation::kMaxTensorParallel))
      ->capture_default_str();
  add_gpu(f.step);
  add_stream_k(f.step);
}

Outcome run_kernel_command(const KernelFlags& f) {
  validation::Predictor predictor;
  workload::KernelSequence seq;
  std::string gpu;
  if (f.memcpy->parsed()) {
    TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(f.gpu));
    gpu = spec.name;
    seq = memcpy_sequence(f.bytes);
  } else {
    TESSERA_ASSIGN_OR_RETURN(const validation::Measurement m, measurement_for(f));
    gpu = m.gpu;
    TESSERA_ASSIGN_OR_RETURN(seq, predictor.kernels(m));
  }
  // One row per kernel name: a step's layers repeat the same kernels.
  struct Row {
    const workload::Kernel* kernel;
    std::int64_t launches = 0;
    double flops = 0;
    double bytes = 0;
    double ns = 0;
  };
  std::vector<Row> rows;
  double total = 0;
  for (const auto& group : seq.groups) {
    for (const workload::Kernel& k : group.kernels) {
      workload::KernelSequence one;
      one.groups.push_back({.kernels = {k}, .repeat = 1});
      TESSERA_ASSIGN_OR_RETURN(
          const double ns,
          predictor.time_sequence(gpu, one, f.stream_k ? std::optional(true) : std::nullopt));
      auto it = std::ranges::find_if(rows, [&](const Row& r) { return r.kernel->name == k.name; });
      if (it == rows.end()) it = rows.insert(rows.end(), Row{.kernel = &k});
      it->launches += group.repeat;
      it->flops += k.total_flops() * group.repeat;
      it->bytes += k.total_bytes() * group.repeat;
      it->ns += ns * group.repeat;
      total += ns * group.repeat;
    }
  }
  fmt::print("{} (simulated; each kernel alone on the whole GPU)\n", gpu);
  fmt::print("{:<28} {:>8} {:>8} {:>8} {:>12} {:>12} {:>12} {:>11} {:>10} {:>9}\n", "kernel",
             "launches", "blocks", "threads", "pipe", "GFLOP", "MB", "time us", "TFLOP/s", "GB/s");
  for (const Row& r : rows) {
    fmt::print("{:<28} {:>8} {:>8} {:>8} {:>12} {:>12.3f} {:>12.3f} {:>11.2f} {:>10.1f} {:>9.0f}\n",
               r.kernel->name, r.launches, r.kernel->blocks, r.kernel->block.threads,
               workload::to_string(r.kernel->pipe), r.flops / 1e9, r.bytes / 1e6, r.ns / 1e3,
               r.flops / r.ns / 1e3, r.bytes / r.ns);
  }
  fmt::print("total {:.2f} us\n", total / 1e3);
  return core::Status{};
}

}  // namespace tessera::cli
