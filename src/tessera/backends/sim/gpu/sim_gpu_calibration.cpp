// The simulated GPU's options per board, fitted to measured kernel times by
// `tessera validate --fit` (docs/validate.md: the profiles, the split and the error on the rows
// not fitted on). Each value is what that command printed at the commit that typed it in, on
// ../shared/data/perf_profiles; rerun it after a change to the model and update the table. A
// board without a fit of its own is simulated with the generic assumptions of
// sim_gpu_options.hpp.

#include <string_view>

#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"

namespace tessera::sim {

namespace {

// Fitted on vidur's A100 80GB operator profiles of Llama-2-7B/70B and CodeLlama-34B and its DGX
// A100 all-reduce profile.
SimGpuOptions a100() {
  SimGpuOptions o;
  o.launch_overhead = 1757;
  o.elementwise_bandwidth_fraction = 0.4733;
  o.pointwise_bandwidth_fraction = 0.9774;
  o.norm_bandwidth_fraction = 0.3782;
  o.sm_bandwidth_multiple = 0.9999;
  o.gather_bandwidth_fraction = 0.1591;
  o.gemm_tile_selection = true;
  o.achievable_bandwidth_fraction = 0.7232;
  o.gemm_compute_fraction = 0.7531;
  o.gemm_tile_knee = 32.8;
  o.gemm_fixed = 2274;
  // No A100 profile with Stream-K kernels: the library with them takes the fit without.
  o.stream_k_compute_fraction = o.gemm_compute_fraction;
  o.stream_k_tile_knee = o.gemm_tile_knee;
  o.stream_k_fixed = o.gemm_fixed;
  o.collective_latency = 6689;
  o.link_bandwidth_fraction = 0.718;
  return o;
}

// Fitted on vidur's H100 operator profiles of the same three models, inference_sim's H100 FP8
// GEMMs (n = 6144), FlashAttention-3 prefills and FlashInfer decodes (three head shapes), vidur's
// DGX H100 all-reduce profile, and (the library with Stream-K kernels) LLMServingSim's Llama-3.1-8B
// GEMMs.
SimGpuOptions h100() {
  SimGpuOptions o;
  o.launch_overhead = 1497;
  o.elementwise_bandwidth_fraction = 0.5383;
  o.pointwise_bandwidth_fraction = 0.9997;
  o.norm_bandwidth_fraction = 0.3852;
  o.sm_bandwidth_multiple = 1;
  o.gather_bandwidth_fraction = 0.1857;
  o.gemm_tile_selection = true;
  o.achievable_bandwidth_fraction = 0.8331;
  o.gemm_compute_fraction = 0.7222;
  o.gemm_tile_knee = 280.1;
  o.gemm_fixed = 3491;
  o.stream_k_compute_fraction = 0.8249;
  o.stream_k_tile_knee = 1.859;
  o.stream_k_fixed = 4402;
  o.attention_compute_fraction = 0.7271;
  o.attention_bandwidth_fraction = 0.9552;
  o.collective_latency = 3337;
  o.link_bandwidth_fraction = 0.8068;
  return o;
}

// The board a spec belongs to: a MIG slice's spec is named "<board> <profile>".
std::string_view board_of(std::string_view name) {
  return name.substr(0, name.find(' '));
}

}  // namespace

SimGpuOptions default_options(const hw::GpuSpec& spec) {
  const std::string_view board = board_of(spec.name);
  // ASSUMPTION: the A100 40GB has the 80GB board's GA100 die, SMs and kernels (only its HBM2 is
  // slower, which the spec's bandwidth carries), so it takes the 80GB fit.
  if (board == "A100-SXM4-80GB" || board == "A100-SXM4-40GB") return a100();
  // ASSUMPTION: the H200 is the H100's GH100 die with faster HBM3e; no public per-kernel profile
  // of it was found, so it takes the H100 fit (its bandwidth comes from its spec).
  if (board == "H100-SXM5-80GB" || board == "H200-SXM-141GB") return h100();
  return SimGpuOptions{};
}

}  // namespace tessera::sim
