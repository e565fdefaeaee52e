#pragma once
// Runs the tessera command line in-process, as the report tests drive it, with its output kept.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/cli/command_line.hpp"

namespace tessera::test {

struct CliRun {
  int status = 0;
  std::string out;
  std::string err;
};

inline CliRun run_cli(std::vector<const char*> argv) {
  cli::CommandLine line;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  CliRun run;
  run.status = line.main(static_cast<int>(argv.size()), argv.data());
  run.out = testing::internal::GetCapturedStdout();
  run.err = testing::internal::GetCapturedStderr();
  return run;
}

}  // namespace tessera::test
