#pragma once
// The experiments' scenario files (examples/experiments/*.yaml), built into the binary by CMake
// from the list in src/experiment/CMakeLists.txt.

#include <span>
#include <string_view>

namespace tessera::experiment {

struct EmbeddedScenario {
  std::string_view file;  // name under examples/experiments/
  std::string_view text;
};

std::span<const EmbeddedScenario> embedded_scenarios();

}  // namespace tessera::experiment
