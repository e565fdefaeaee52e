#pragma once
// tessera determinism: the determinism harness (experiment/determinism_harness.hpp) on the
// simulated GPU or a real one. Exit status 0 when the "fixed" variant is identical everywhere, 1
// when it is not (a real determinism failure), 2 for usage or backend errors; a "drift" mismatch
// is reported, never a failure.

#include <CLI/CLI.hpp>
#include <string>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct DeterminismFlags {
  CLI::App* command = nullptr;
  std::string backend = "auto";
  std::string gpu;
  // Numbers and lists are taken as text and checked by the command, so that a malformed value is
  // a usage error (exit status 2) with a message naming the flag.
  std::string tokens = "64";
  std::string modes;
  std::string sizes = "16,32,64";
  std::string variant = "both";
  std::string seed = "1";
  std::string json_path;
  bool quiet = false;
};

void add_determinism_options(CLI::App& command, DeterminismFlags& flags);
// Runs the command: exit status 0 or 1 as above, or an error with exit status 2.
Outcome run_determinism_command(const DeterminismFlags& flags);

}  // namespace tessera::cli
