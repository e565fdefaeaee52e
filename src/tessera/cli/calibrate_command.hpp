#pragma once
// `tessera calibrate`: the simulated GPU's kernel times against a GPU's measured ones for the same
// kernels (experiment/calibration.hpp), as a table and JSON. `--backend cuda` (the default)
// measures the real GPU through the driver (each kernel runs as tessera_emulate); `--backend sim`
// measures a simulated GPU, a check of the procedure itself.

#include <CLI/CLI.hpp>
#include <string>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct CalibrateFlags {
  CLI::App* command = nullptr;
  std::string backend = "cuda";
  std::string gpu;  // catalog entry; empty: the driver's GPU (cuda) or H100-SXM5-80GB (sim)
  std::string model = "llama-3-8b";
  int repeat = 5;
  std::string json_path;
};

// Exit status of `tessera calibrate`: 0 done; 2 the real GPU is not available here (no toolkit
// at build time, no driver, no device); 1 any other error.
inline constexpr int kCalibrateNoGpu = 2;

void add_calibrate_options(CLI::App& command, CalibrateFlags& flags);
// Runs it: exit status 0, or an error (exit status 1, or kCalibrateNoGpu without a GPU).
Outcome run_calibrate_command(const CalibrateFlags& flags);

}  // namespace tessera::cli
