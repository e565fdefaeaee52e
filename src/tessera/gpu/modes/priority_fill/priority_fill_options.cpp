#include "tessera/gpu/modes/priority_fill/priority_fill_options.hpp"

#include <fmt/format.h>

namespace tessera::gpu {

const std::vector<OptionField<PriorityFillOptions>>& priority_fill_option_fields() {
  static const std::vector<OptionField<PriorityFillOptions>> fields = {
      number_option(
          "best_effort_share", &PriorityFillOptions::best_effort_share,
          {.meaning = "fraction of the SMs best-effort tenants keep while latency-critical work "
                      "is in flight, in (0, 1]",
           .basis = "tessera's choice: the largest share that kept the tail within 1.1x of alone "
                    "on the frontier experiment's three seeds (docs/priority-fill.md)"},
          +[](double share) {
            if (share > 0 && share <= 1) return std::string();
            return fmt::format(
                "best_effort_share is a fraction of the SMs in (0, 1] (0.05 leaves a twentieth "
                "to best-effort work while latency-critical work runs), got {}",
                share);
          }),
      switch_option(
          "slo_guided", &PriorityFillOptions::slo_guided,
          {.meaning = "the reserve grows a grid step after each latency-critical step that ends "
                      "within 0.8 of its budget (half its TPOT or TTFT target) and halves after "
                      "one past it, from best_effort_share up to every SM",
           .basis = "tessera's choice: AIMD on the step budget the remap policies size "
                    "partitions by (kSloStepBudget)"}),
  };
  return fields;
}

}  // namespace tessera::gpu
