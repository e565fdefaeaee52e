#include "tessera/validation/split.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "tessera/validation/predict.hpp"

namespace tessera::validation {

namespace {

bool from(const Measurement& m, std::string_view prefix) {
  return m.source.starts_with(prefix);
}

}  // namespace

bool fitted_on(const Measurement& m) {
  if (from(m, "vidur_compute/")) {
    constexpr std::array<std::string_view, 3> kFitted{"/Llama-2-7b-hf/", "/Llama-2-70b-hf/",
                                                      "/CodeLlama-34b-Instruct-hf/"};
    return std::ranges::any_of(
        kFitted, [&](std::string_view dir) { return m.source.find(dir) != std::string::npos; });
  }
  if (from(m, "inference_sim_kernels_h100/gemm/")) return m.n == 6144;
  if (from(m, "inference_sim_kernels_h100/mha/")) {
    constexpr std::array<std::pair<int, int>, 3> kFitted{{{32, 32}, {32, 8}, {64, 8}}};
    return std::ranges::find(kFitted, std::pair{m.model.heads, m.model.kv_heads}) != kFitted.end();
  }
  if (from(m, "vidur_collectives/")) return m.interconnect == "nvswitch";
  if (from(m, "splitwise_sim/")) return m.gpu.starts_with("A100");
  // Only the options of the GEMM library with Stream-K kernels are fitted on LLMServingSim, so
  // its other rows (embeddings) stay held out.
  if (from(m, "llmservingsim_h100/")) {
    return m.source.find("/Llama-3.1-8B/") != std::string::npos && category(m).starts_with("GEMM");
  }
  return false;
}

}  // namespace tessera::validation
