#pragma once
// The options of "time-slicing" and their declarations (keys, defaults' basis, ranges).

#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/gpu/mode_option.hpp"

namespace tessera::gpu {

struct TimeSlicingOptions {
  core::Nanos time_slice = core::millis(2);       // > 0
  core::Nanos context_switch = core::micros(25);  // >= 0
};

const std::vector<OptionField<TimeSlicingOptions>>& time_slicing_option_fields();

}  // namespace tessera::gpu
