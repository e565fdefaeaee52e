#pragma once
// One measured time of work on a real GPU, in the terms the simulator can rebuild it in: a GEMM
// of a shape, some kernels of one decoder layer of a model in a prefill or decode step, a whole
// step, or a collective between GPUs. Every reader (profile_readers.hpp, measurement_csv.hpp)
// turns its format into these, so `tessera validate` treats all sources alike.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/kernels/precision.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::validation {

enum class MeasuredKind {
  kGemm,          // one GEMM C[m,n] = A[m,k] x B[k,n]
  kLayerKernels,  // named kernels of one decoder layer (one GPU's shard), summed
  kStep,          // a whole prefill or decode step of a model (one GPU's shard, collectives in)
  kCollective,    // a collective between GPUs
};

enum class Collective { kAllReduce, kSendRecv };

// How the measured engine implements the layer's operators. The simulator's builders are
// vLLM's kernels (workload/models/transformer.cpp); other engines launch other kernels for the
// same operator (Hugging Face's eager RMSNorm is several elementwise kernels, not one).
enum class Implementation { kVllm, kHfEager };

// The attention kernels of the step (whatever the builder chose: FlashAttention prefill, paged
// attention V1, or V2 and its reduce), for layer_kernels.
inline constexpr std::string_view kAttentionKernels = "@attention";

struct Measurement {
  // Where the row came from: "<file under the profile root or as given>:<line>", plus the
  // column or operator when one line holds several measurements ("... attn_pre_proj").
  std::string source;
  std::string gpu;  // hw catalog name (hw::find_gpu resolves it)
  MeasuredKind kind = MeasuredKind::kGemm;
  workload::Precision precision = workload::Precision::kBf16;

  // kGemm
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;

  // kLayerKernels and kStep. `model` is the whole model (not a shard); tensor_parallel says how
  // many GPUs share it, and the simulator times the first GPU's shard
  // (workload/models/tensor_parallel.hpp). For kLayerKernels only the layer's shapes matter.
  workload::ModelConfig model{};
  int tensor_parallel = 1;
  workload::Phase phase = workload::Phase::kPrefill;  // kPrefill or kDecode
  // kPrefill: each prompt's length; kDecode: each sequence's cached tokens before the step.
  std::vector<int> lengths;
  // kLayerKernels: names of kernels of one decoder layer as the builders name them
  // ("qkv_proj", "input_rmsnorm", ...) or kAttentionKernels; the measurement is their sum.
  std::vector<std::string> layer_kernels;
  Implementation implementation = Implementation::kVllm;
  // kGemm, kLayerKernels, kStep: whether the measured GEMM library has Stream-K kernels
  // (sim::SimGpuOptions::gemm_stream_k); unset, the simulator's own setting.
  std::optional<bool> gemm_stream_k;
  // kLayerKernels: the benchmark timed the library call from the host, so the span holds the
  // call's host work before its kernels start (harness_costs.hpp).
  bool host_timed_call = false;

  // kCollective
  Collective collective = Collective::kAllReduce;
  std::int64_t bytes = 0;    // message size
  int gpus = 0;              // GPUs taking part
  std::string interconnect;  // "nvswitch" (a DGX) or "nvlink-pairwise"

  double measured_ns = 0;
};

// The model of a row that times only attention kernels: its heads and head size. The MLP width
// (four times the hidden size, divisible by any degree that divides the heads) and the
// vocabulary are there only to make the config valid; the attention kernels never read them.
inline workload::ModelConfig attention_model(std::string name, int heads, int kv_heads,
                                             int head_dim) {
  const int hidden = heads * head_dim;
  return workload::ModelConfig{.name = std::move(name),
                               .layers = 1,
                               .hidden = hidden,
                               .heads = heads,
                               .kv_heads = kv_heads,
                               .head_dim = head_dim,
                               .intermediate = 4 * hidden,
                               .vocab = 32000,
                               .bytes_per_param = 2,
                               .kv_bytes_per_elem = 2};
}

// Rows a reader read but the simulator cannot rebuild (an MoE expert layer, a model the catalog
// lacks, a power-capped GPU): counted and reported, never silently dropped.
struct Skipped {
  std::string source;  // the file
  std::string reason;
  std::int64_t rows = 0;
};

struct MeasurementSet {
  std::vector<Measurement> rows;
  std::vector<Skipped> skipped;
};

}  // namespace tessera::validation
