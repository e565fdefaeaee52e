// The tessera command: simulate scenarios, run the demo and the papers' experiments, list what is
// built in, and run the cluster's and nodes' servers. Each subcommand is a row of the one command
// table (commands.cpp); this file only parses the command line and runs the one named.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <utility>
#include <vector>

#include "tessera/cli/command.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/version.hpp"
#include "tessera/experiment/data_dir.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{
      "tessera: share NVIDIA GPUs between latency-critical inference and best-effort work.\n"
      "Without a GPU, everything runs on tessera's discrete-event GPU simulator."};
  app.set_version_flag("--version", fmt::format("tessera {}", core::kVersion));
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::help);  // a wrong flag shows the usage, not just a line
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  std::string data_dir;
  app.add_option("--data-dir", data_dir,
                 "The public data sets the experiments replay (default: $TESSERA_DATA_DIR, else "
                 "../shared/data)");

  const std::vector<std::unique_ptr<cli::Command>> commands = cli::make_commands();
  std::vector<std::pair<CLI::App*, cli::Command*>> added;
  for (const auto& c : commands) added.emplace_back(&c->add_to(app), c.get());

  CLI11_PARSE(app, argc, argv);
  if (auto st = core::set_log_level(log_level); !st) return cli::Outcome(st).finish();
  experiment::set_data_dir(data_dir);
  for (const auto& [subcommand, command] : added) {
    if (*subcommand) return command->run().finish();
  }
  return 0;  // unreachable: require_subcommand(1)
}
