#pragma once
// The options of "lithos" and their declarations.

#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/gpu/mode_option.hpp"

namespace tessera::gpu {

struct LithosOptions {
  core::Nanos atom_duration = core::micros(250);  // > 0
  bool right_sizing = false;  // give each kernel the fewest TPCs within latency_slip
  bool dvfs = false;          // lower the clock where latency_slip allows
  double latency_slip = 0.1;  // in [0, 1]
};

const std::vector<OptionField<LithosOptions>>& lithos_option_fields();

}  // namespace tessera::gpu
