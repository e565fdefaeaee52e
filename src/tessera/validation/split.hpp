#pragma once
// Which measured rows the simulator's calibration is fitted on, and which it is judged on. The
// rule is fixed per source so that the error reported on the other rows is an error on data the
// fit never saw (docs/validate.md, "The split"):
// - vidur_compute: fitted on Llama-2-7B, Llama-2-70B and CodeLlama-34B; judged on Llama-3-8B,
//   Llama-3-70B, Qwen-72B and InternLM-20B (other models of the same GPUs).
// - inference_sim GEMMs: fitted on n = 6144, judged on n = 11008.
// - inference_sim attention: fitted on the head shapes 32-32-128, 32-8-128 and 64-8-128, judged
//   on 28-4-128, 40-40-128 and 56-8-128.
// - vidur_collectives: fitted on the DGX (NVSwitch) machines, judged on pairwise NVLink.
// - splitwise_sim steps: fitted on the A100, judged on the H100.
// - llmservingsim: its GEMMs of Llama-3.1-8B fit the Stream-K library's options; judged on
//   Llama-3.1-70B and Mixtral-8x7B, and on every embedding row.
// - every user file: never fitted on.

#include "tessera/validation/measurement.hpp"

namespace tessera::validation {

bool fitted_on(const Measurement& m);

}  // namespace tessera::validation
