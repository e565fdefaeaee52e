#pragma once
// tessera experiment NAME: one of the papers' experiments from the one experiment registry
// (experiment/registry.hpp), side by side with the baselines, with the paper's figures next to
// tessera's.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct ExperimentFlags {
  CLI::App* command = nullptr;
  std::string name;
  bool list = false;
  std::string json_path;
  std::string trace_path;
  std::string report_path;
  std::string duration;
  std::int64_t seed = -1;
  std::string scenario_path;  // frontier: a scenario file of the user's instead of its own
  bool quiet = false;
};

void add_experiment_options(CLI::App& command, ExperimentFlags& flags);
Outcome run_experiment_command(const ExperimentFlags& flags);

// One line per experiment: name, paper, figure.
void print_experiments();

}  // namespace tessera::cli
