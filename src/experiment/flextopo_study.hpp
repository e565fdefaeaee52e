#pragma once
// What the FlexTopo experiments (`tessera experiment flextopo-*`) share: their options and the
// shape of their result. Each study runs the cluster level (src/cluster) on the cluster simulator
// (src/sim/sim_cluster.hpp) and prints a table for people and JSON for programs, with the paper's
// figures beside tessera's. Same seed, same output, byte for byte (no wall-clock figures in
// either; speed is measured in bench/).

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::experiment {

struct FlextopoOptions {
  std::optional<std::uint64_t> seed;  // overrides the study's seed
  // Called as the study goes: steps done, steps in all, what is running.
  std::function<void(std::int64_t done, std::int64_t total, std::string_view what)> progress;
};

struct FlextopoResult {
  std::string name;  // "flextopo-preemption"
  std::string text;  // tables, claims (paper | tessera | same direction?) and the setup
  nlohmann::json json;
};

}  // namespace tessera::experiment
