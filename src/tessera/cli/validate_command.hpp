#pragma once
// `tessera validate`: the simulated GPU against measured times. Without files it reads the public
// profiles under the data directory's perf_profiles/ (validation/profile_readers.hpp); with
// files it reads them in the measurement schema (validation/measurement_csv.hpp). Prints per
// category the median and P90 of |error| and the worst rows; --csv writes every row, --report an
// HTML page with the tables and plots (validation/html_report.hpp). --fit first
// fits the simulator's options on the split's fitting rows (validation/fit.hpp), prints them and
// compares with those values.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct ValidateFlags {
  CLI::App* command = nullptr;
  std::vector<std::string> files;
  std::vector<std::string> profiles;  // files under perf_profiles/ to read instead of all
  std::string csv_path;
  std::string report_path;  // the HTML page
  int worst = 5;
  bool fit = false;
  bool generic = false;
  bool quiet = false;
};

void add_validate_options(CLI::App& command, ValidateFlags& flags);
Outcome run_validate_command(const ValidateFlags& flags);

}  // namespace tessera::cli
