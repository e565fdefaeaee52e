#pragma once
// Readers for the measured GPU performance profiles under the data directory's perf_profiles/
// (PROVENANCE.md there names each source). Each known file format becomes Measurement rows;
// what the simulator cannot rebuild is counted in MeasurementSet::skipped with the reason.
//
//   vidur_compute/{a100,h100}/ORG/MODEL/mlp.csv         per-operator times of one layer
//   inference_sim_kernels_h100/gemm/h100/data.csv        FP8 GEMMs
//   inference_sim_kernels_h100/mha/prefill/h100/NQ-NKV-HD.csv       prefill attention
//   inference_sim_kernels_h100/mha/decode/h100/NQ-NKV-HD-tpN.csv    decode attention
//   llmservingsim_h100/ORG/MODEL/tpN/layers.csv          Hugging Face eager modules
//   llmservingsim_h100/ORG/MODEL/tpN/attention.csv       attention (vidur's format)
//   splitwise_sim/perf_model.csv                         whole prefill and decode steps
//   vidur_collectives/DIR__{all_reduce,send_recv}.csv    NCCL collectives
//
// Times are converted to ns exactly (the decimal point moved, no rounding by multiplication);
// where a file gives min/max/mean/median/std the median is taken. A row whose time is not a
// finite positive number is skipped; a malformed file (a missing column, a cell that is not a
// number) is an error naming FILE:LINE and the column. No exception leaves these functions.

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/validation/measurement.hpp"

namespace tessera::validation {

// Every profile tessera knows under `perf_profiles_dir` (the data directory's perf_profiles/),
// in a fixed order (sorted relative paths), so the rows and their order are the same on every
// machine. A .csv file of no known format is listed in `skipped` (0 rows), not read.
core::Result<MeasurementSet> read_shared_profiles(const std::string& perf_profiles_dir);

// One file of a known format, found by its path under perf_profiles/
// ("vidur_compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv"). The rows' sources name the file by
// this relative path.
core::Result<MeasurementSet> read_profile(const std::string& perf_profiles_dir,
                                          const std::string& relative);

// The profile a row's source comes from, by its top directory ("vidur_compute" for
// "vidur_compute/a100/.../mlp.csv:17 add"); empty for a source outside the shared profiles (a
// user's file).
std::string_view profile_family(std::string_view source);

}  // namespace tessera::validation
