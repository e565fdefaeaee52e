#pragma once
// The options of "cogpu" and "tpot-first" (both a CoGpuMode, with another remap policy) and their
// declarations, shared by the two entries.

#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/gpu/mode_option.hpp"

namespace tessera::gpu {

struct CoGpuOptions {
  core::Nanos remap_cost = core::micros(10);
  core::Nanos remap_min_residency = core::millis(2);
};

const std::vector<OptionField<CoGpuOptions>>& cogpu_option_fields();

}  // namespace tessera::gpu
