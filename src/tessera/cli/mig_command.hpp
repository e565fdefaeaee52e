#pragma once
// `tessera mig layouts|plan|run`: the MIG level from the command line. `layouts` lists a GPU's
// MIG layout states and their reachability scores; `plan` shows what a job file would do, as the
// simulated MIG GPU predicts it, without touching a GPU; `run` runs it on the simulated GPU
// (`--backend sim`) or on a real one through NVML (`--backend nvml`).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/cli/command.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {

struct MigFlags {
  CLI::App* command = nullptr;
  CLI::App* layouts = nullptr;
  CLI::App* plan = nullptr;
  CLI::App* run = nullptr;

  std::string gpu;  // layouts: required; plan/run: overrides the job file's
  std::vector<int> profiles;
  std::string jobs_path;
  std::string scheme;  // overrides the job file's
  std::string ageing;  // time-fit's ageing bound, as text ("45min"); empty: the default
  bool share = false;  // time-fit: two jobs to an instance (simulated backend)
  std::string backend = "sim";
  bool dry_run = false;
  unsigned nvml_device = 0;
  std::string journal;  // --backend nvml; empty: default_journal_path
  std::string json_path;
  bool quiet = false;
};

// Adds `mig` and its subcommands to `app`; `flags` receives their values and must outlive parsing.
void add_mig_options(CLI::App& command, MigFlags& flags);
// Runs the subcommand that was parsed (when `*flags.command` is set).
Outcome run_mig_command(const MigFlags& flags);

}  // namespace tessera::cli
