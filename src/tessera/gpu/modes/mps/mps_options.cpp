#include "tessera/gpu/modes/mps/mps_options.hpp"

namespace tessera::gpu {

const std::vector<OptionField<MpsOptions>>& mps_option_fields() {
  static const std::vector<OptionField<MpsOptions>> fields = {
      percent_option(
          "mps_active_thread_percentage", &MpsOptions::active_thread_percentage,
          {.meaning = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for every client, in (0, 100]",
           .basis = "NVIDIA MPS documentation; 100, the driver's default, sets no cap"},
          +[](double pct) {
            return std::string(pct > 0 && pct <= 100 ? "" : "must be in (0, 100]");
          }),
  };
  return fields;
}

}  // namespace tessera::gpu
