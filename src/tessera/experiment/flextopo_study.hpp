#pragma once
// What the FlexTopo experiments (`tessera experiment flextopo-*`) share: their options and the
// shape of their result. Each study runs the cluster level (src/tessera/cluster) on the cluster
// simulator (src/tessera/backends/sim/cluster/sim_cluster.hpp) and prints a table for people and
// JSON for programs, with the paper's figures beside tessera's. Same seed, same output, byte for
// byte (no wall-clock figures in either; speed is measured in bench/).

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

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

struct FlextopoExperiment {
  std::string name;    // `tessera experiment NAME`
  std::string paper;   // "FlexTopo (Zhang et al., arXiv 2411.11560)"
  std::string figure;  // what of the paper it reproduces or adds
  core::Result<FlextopoResult> (*run)(const FlextopoOptions&) = nullptr;
};

}  // namespace tessera::experiment
