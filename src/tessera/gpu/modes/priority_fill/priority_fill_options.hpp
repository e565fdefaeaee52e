#pragma once
// The options of "priority-fill" and their declarations.

#include <vector>

#include "tessera/gpu/mode_option.hpp"

namespace tessera::gpu {

struct PriorityFillOptions {
  // Fraction of the SMs best-effort tenants keep while latency-critical work is in flight, in
  // (0, 1]: the policy's one knob, trading the latency-critical tail for best-effort throughput.
  double best_effort_share = 0.05;
  // The reserve follows the latency-critical tenants' SLO slack (fill_policy.hpp, next_reserve),
  // from best_effort_share up to every SM and never below it.
  bool slo_guided = false;
};

const std::vector<OptionField<PriorityFillOptions>>& priority_fill_option_fields();

}  // namespace tessera::gpu
