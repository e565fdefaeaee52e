#pragma once
// The options of "mps" and their declarations.

#include <vector>

#include "tessera/gpu/mode_option.hpp"

namespace tessera::gpu {

struct MpsOptions {
  double active_thread_percentage = 100;  // in (0, 100]; 100: no cap
};

const std::vector<OptionField<MpsOptions>>& mps_option_fields();

}  // namespace tessera::gpu
