#include "tessera/cli/output.hpp"

#include <fmt/format.h>

#include <fstream>

namespace tessera::cli {

core::Status write_text(const std::string& path, const std::string& text) {
  if (path == "-") {
    fmt::print("{}\n", text);
    return {};
  }
  std::ofstream out(path);
  if (!out || !(out << text << '\n')) {
    return core::failf(core::Domain::kIo, core::Code::kNotFound,
                       "cannot write '{}': check that the folder exists and is writable", path);
  }
  return {};
}

}  // namespace tessera::cli
