#pragma once
// The scenario `tessera demo` runs: examples/demo.yaml, embedded into the binary at build time.

#include <string_view>

namespace tessera::scenario {

std::string_view demo_scenario_yaml();
inline constexpr std::string_view kDemoScenarioName = "examples/demo.yaml (built in)";

}  // namespace tessera::scenario
