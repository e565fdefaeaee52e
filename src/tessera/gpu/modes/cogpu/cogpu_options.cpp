#include "tessera/gpu/modes/cogpu/cogpu_options.hpp"

namespace tessera::gpu {

const std::vector<OptionField<CoGpuOptions>>& cogpu_option_fields() {
  static const std::vector<OptionField<CoGpuOptions>> fields = {
      duration_option("remap_cost", &CoGpuOptions::remap_cost,
                      {.meaning = "time to move a virtual context to another SM partition "
                                  "(drain its stream, wait on an event in the new one)",
                       .basis = "CoGPU reports only a relative cost; an assumption"}),
      duration_option(
          "remap_min_residency", &CoGpuOptions::remap_min_residency,
          {.meaning = "a latency-critical partition is not shrunk sooner than this after it last "
                      "changed, so a short gap between requests keeps its SMs (anti-thrash)",
           .basis = "CoGPU gives no value; about one decode step, an assumption"}),
  };
  return fields;
}

}  // namespace tessera::gpu
