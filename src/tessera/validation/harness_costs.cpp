#include "tessera/validation/harness_costs.hpp"

namespace tessera::validation {

HarnessCosts default_harness_costs(std::string_view gpu) {
  // Fitted on inference_sim's FlashInfer decode and FlashAttention-3 prefill rows of three head
  // shapes (docs/validate.md, "Attention").
  if (gpu == "H100-SXM5-80GB") return {.host_call = 17064};
  return kNoHarnessCosts;
}

}  // namespace tessera::validation
