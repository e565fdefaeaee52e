#pragma once
// tessera simulate SCENARIO and tessera demo: a scenario run under its sharing modes on the
// simulated GPU (or a real one with --backend), printed as a table, optionally as JSON, an HTML
// page of tables and plots, and a Perfetto timeline. The demo runs the built-in examples/demo.yaml.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct RunFlags {
  CLI::App* command = nullptr;
  std::string scenario_path;  // simulate only
  std::string json_path;
  std::string report_path;
  std::string trace_path;
  std::vector<std::string> modes;
  std::vector<std::string> mode_options;  // KEY=VALUE, over the scenario's mode_options
  std::string duration;
  std::string gpu;
  std::int64_t seed = -1;
  std::string backend = "sim";
  bool quiet = false;
};

void add_simulate_options(CLI::App& command, RunFlags& flags);
void add_demo_options(CLI::App& command, RunFlags& flags);
Outcome run_simulate_command(const RunFlags& flags);
Outcome run_demo_command(const RunFlags& flags);

}  // namespace tessera::cli
