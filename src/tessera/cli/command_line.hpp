#pragma once
// tessera's whole command line: the global options and every row of the command table
// (commands.cpp), added to one CLI::App. main parses argv into it and runs the command named;
// tests walk it to check the reference page against the options it really has.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

class CommandLine {
 public:
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  CLI::App& app() { return app_; }
  // After app() parsed the arguments: applies the global options, runs the command named and
  // returns the exit status.
  int run();

 private:
  CLI::App app_;
  std::string log_level_ = "warn";
  std::string data_dir_;
  std::vector<std::unique_ptr<Command>> commands_;
  std::vector<std::pair<CLI::App*, Command*>> added_;
};

}  // namespace tessera::cli
