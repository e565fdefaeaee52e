#pragma once
// The data directory: the public data sets the experiments replay (request traces), which sit
// beside a checkout as ../shared/data. The binary knows no checkout, so the directory is, first
// found: set_data_dir (the CLI's --data-dir DIR), the environment variable TESSERA_DATA_DIR, or
// ../shared/data relative to the working directory (a checkout's root).

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::experiment {

// Overrides the environment variable and the default; an empty DIR restores them.
void set_data_dir(std::string dir);
std::string data_dir();

// The absolute path of RELATIVE (e.g. "llm_traces/x.csv") under the data directory; a missing
// file is an error naming the path tried and both ways to point tessera at the data.
core::Result<std::string> data_file(std::string_view relative);
// The same for a directory ("perf_profiles").
core::Result<std::string> data_subdir(std::string_view relative);

}  // namespace tessera::experiment
