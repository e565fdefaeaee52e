#include "tessera/cli/command_line.hpp"

#include <fmt/format.h>

#include "tessera/core/log.hpp"
#include "tessera/core/version.hpp"
#include "tessera/experiment/data_dir.hpp"

namespace tessera::cli {

CommandLine::CommandLine()
    : app_(
          "tessera: share NVIDIA GPUs between latency-critical inference and best-effort work.\n"
          "Without a GPU, everything runs on tessera's discrete-event GPU simulator."),
      commands_(make_commands()) {
  app_.set_version_flag("--version", fmt::format("tessera {}", core::kVersion));
  app_.require_subcommand(1);
  app_.failure_message(CLI::FailureMessage::help);  // a wrong flag shows the usage, not a line
  app_.add_option("--log-level", log_level_, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app_.add_option("--data-dir", data_dir_,
                  "The public data sets the experiments replay (default: $TESSERA_DATA_DIR, else "
                  "../shared/data)");
  for (const auto& c : commands_) added_.emplace_back(&c->add_to(app_), c.get());
}

int CommandLine::run() {
  if (auto st = core::set_log_level(log_level_); !st) return Outcome(st).finish();
  experiment::set_data_dir(data_dir_);
  for (const auto& [subcommand, command] : added_) {
    if (*subcommand) return command->run().finish();
  }
  return 0;  // unreachable: require_subcommand(1)
}

}  // namespace tessera::cli
