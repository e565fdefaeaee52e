#include "tessera/gpu/modes/time_slicing/time_slicing_options.hpp"

namespace tessera::gpu {

const std::vector<OptionField<TimeSlicingOptions>>& time_slicing_option_fields() {
  static const std::vector<OptionField<TimeSlicingOptions>> fields = {
      duration_option(
          "time_slice", &TimeSlicingOptions::time_slice,
          {.meaning = "how long a context holds the GPU while another waits",
           .basis = "the driver's slice length is not documented; an assumption"},
          +[](core::Nanos v) { return std::string(v > 0 ? "" : "must be > 0"); }),
      duration_option("context_switch", &TimeSlicingOptions::context_switch,
                      {.meaning = "idle time to switch contexts (save and restore of SM state)",
                       .basis = "an assumption of the model"}),
  };
  return fields;
}

}  // namespace tessera::gpu
