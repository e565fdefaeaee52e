#pragma once
// Where the command's JSON goes: a file, or stdout for "-".

#include <string>

#include "tessera/core/error.hpp"

namespace tessera::cli {

// Writes `text` and a newline to `path` ("-": stdout); the error names the path.
core::Status write_text(const std::string& path, const std::string& text);

}  // namespace tessera::cli
