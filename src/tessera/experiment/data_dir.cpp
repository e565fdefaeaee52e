#include "tessera/experiment/data_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

namespace tessera::experiment {

namespace {

constexpr std::string_view kDefaultDataDir = "../shared/data";
constexpr const char* kEnvVar = "TESSERA_DATA_DIR";

// Set once by the CLI before anything runs.
std::string& flag_dir() {
  static std::string dir;
  return dir;
}

struct Choice {
  std::string dir;
  std::string_view source;  // how the directory was chosen, for errors
};

Choice choose() {
  if (!flag_dir().empty()) return {flag_dir(), "--data-dir"};
  const char* env = std::getenv(kEnvVar);
  if (env != nullptr && *env != '\0') return {env, kEnvVar};
  return {std::string(kDefaultDataDir), "the default, relative to the working directory"};
}

}  // namespace

void set_data_dir(std::string dir) {
  flag_dir() = std::move(dir);
}

std::string data_dir() {
  return choose().dir;
}

namespace {

core::Result<std::string> find_in_data_dir(std::string_view relative, bool directory) {
  const Choice c = choose();
  const std::filesystem::path path =
      std::filesystem::absolute(std::filesystem::path(c.dir) / relative).lexically_normal();
  std::error_code ec;
  if (directory ? std::filesystem::is_directory(path, ec)
                : std::filesystem::is_regular_file(path, ec)) {
    return path.string();
  }
  return core::failf(core::Domain::kIo, core::Code::kNotFound,
                     "cannot find '{}' in the data directory '{}' ({}); point tessera at the "
                     "public data sets with --data-dir DIR or the environment variable {}",
                     path.string(), c.dir, c.source, kEnvVar);
}

}  // namespace

core::Result<std::string> data_file(std::string_view relative) {
  return find_in_data_dir(relative, false);
}

core::Result<std::string> data_subdir(std::string_view relative) {
  return find_in_data_dir(relative, true);
}

}  // namespace tessera::experiment
