#pragma once
// tessera's whole command line: the global options and every row of the command table
// (commands.cpp), added to one CLI::App. main hands it argv; tests walk it to check the
// reference page against the options it really has.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

// A usage error (an unknown command or option, a missing or malformed value) exits with this
// status after one line on stderr; a command that fails exits with 1.
inline constexpr int kUsageError = 2;

class CommandLine {
 public:
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  CLI::App& app() { return app_; }
  // Parses the arguments, applies the global options and runs the command named; returns the
  // exit status. --help and --version print to stdout and return 0.
  int main(int argc, const char* const* argv);

 private:
  // The first argument that is neither a global option nor its value, when it names no command.
  std::string unknown_command(int argc, const char* const* argv) const;

  CLI::App app_;
  std::string log_level_ = "warn";
  std::string data_dir_;
  std::vector<std::unique_ptr<Command>> commands_;
  std::vector<std::pair<CLI::App*, Command*>> added_;
};

}  // namespace tessera::cli
