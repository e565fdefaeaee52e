#pragma once
// A folder of the test's own under the temporary folder, named after the process and a count,
// so that tests run in parallel (ctest -j, or the Release and sanitizer trees at once) never
// share files or sockets, and short enough for the sockets made in it (108 bytes in all). Emptied
// when made.

#include <unistd.h>

#include <filesystem>
#include <string>

namespace tessera::test {

inline std::filesystem::path scratch_dir(const std::string& what) {
  static int made = 0;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tessera-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(++made));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace tessera::test
