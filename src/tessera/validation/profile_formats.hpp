#pragma once
// The per-format profile readers behind read_profile (internal to tessera_validation). Each takes
// the file to open and the name its rows' sources and errors show (its path under
// perf_profiles/), plus what the path itself says (the GPU, the model directory, TP, ...).

#include <string>

#include "tessera/core/error.hpp"
#include "tessera/validation/measurement.hpp"

namespace tessera::validation::detail {

struct ProfileFile {
  std::string path;      // opened
  std::string relative;  // shown
};

// The catalog names of the GPUs the profiles were measured on. Only vidur's a100 files name the
// part (A100 80GB); vidur's h100 files, inference_sim's and LLMServingSim's say only "H100", and
// splitwise's h100-80gb is a DGX H100's: all are taken as the SXM5 80 GB part a DGX holds.
inline constexpr std::string_view kA100 = "A100-SXM4-80GB";
inline constexpr std::string_view kH100 = "H100-SXM5-80GB";

// vidur_compute/GPU/ORG/MODEL/mlp.csv; model_dir is MODEL.
core::Result<MeasurementSet> read_vidur_mlp(const ProfileFile& f, std::string_view gpu,
                                            std::string_view model_dir);
// vidur_collectives/DIR__OP.csv; dir is DIR ("a100_dgx"), op "all_reduce" or "send_recv".
core::Result<MeasurementSet> read_vidur_collective(const ProfileFile& f, std::string_view dir,
                                                   std::string_view op);

core::Result<MeasurementSet> read_inference_sim_gemm(const ProfileFile& f);
// NQ-NKV-HD.csv
core::Result<MeasurementSet> read_inference_sim_prefill(const ProfileFile& f, int heads,
                                                        int kv_heads, int head_dim);
// NQ-NKV-HD-tpN.csv
core::Result<MeasurementSet> read_inference_sim_decode(const ProfileFile& f, int heads,
                                                       int kv_heads, int head_dim, int tp);

// llmservingsim_h100/ORG/MODEL/tpN/{layers,attention}.csv; model_dir is MODEL.
core::Result<MeasurementSet> read_llmservingsim_layers(const ProfileFile& f,
                                                       std::string_view model_dir);
core::Result<MeasurementSet> read_llmservingsim_attention(const ProfileFile& f,
                                                          std::string_view model_dir);

core::Result<MeasurementSet> read_splitwise(const ProfileFile& f);

// A decode-attention measurement on the H100: `batch` sequences of `cached` tokens each, one
// GPU's share of `model` under tensor parallelism `tp`.
Measurement h100_decode_attention(std::string source, workload::ModelConfig model, int tp,
                                  workload::Precision precision, int batch, int cached,
                                  double measured_ns);

}  // namespace tessera::validation::detail
