#pragma once
// The experiments' scenario files (examples/experiments/*.yaml) and the MIG experiments' job files
// (examples/mig/experiments/*.yaml), built into the binary by CMake from the lists in
// src/tessera/experiment/CMakeLists.txt.

#include <span>
#include <string_view>

namespace tessera::experiment {

struct EmbeddedScenario {
  std::string_view file;  // name under examples/experiments/
  std::string_view text;
};

std::span<const EmbeddedScenario> embedded_scenarios();
// The MIG experiments' job mixes and predictor cases (examples/mig/experiments/*.yaml, JOBS.yaml
// format), listed in TESSERA_MIG_EXPERIMENT_FILES; `file` is the name under that folder.
std::span<const EmbeddedScenario> embedded_mig_files();

}  // namespace tessera::experiment
