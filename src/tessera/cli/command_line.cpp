#include "tessera/cli/command_line.hpp"

#include <fmt/format.h>

#include <string_view>

#include "tessera/cli/strict_numbers.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/version.hpp"
#include "tessera/experiment/data_dir.hpp"

namespace tessera::cli {
namespace {

// The subcommand path the parse reached ("tessera mig plan"), for the hint after an error.
std::string parsed_path(CLI::App& app) {
  std::string path = app.get_name().empty() ? "tessera" : app.get_name();
  for (CLI::App* at = &app;;) {
    const auto parsed = at->get_subcommands();
    if (parsed.empty()) return path;
    at = parsed.front();
    path += " " + at->get_name();
  }
}

}  // namespace

CommandLine::CommandLine()
    : app_(
          "tessera: share NVIDIA GPUs between latency-critical inference and best-effort work.\n"
          "Without a GPU, everything runs on tessera's discrete-event GPU simulator.",
          "tessera"),
      commands_(make_commands()) {
  app_.set_version_flag("--version", fmt::format("tessera {}", core::kVersion));
  app_.require_subcommand(1);
  app_.add_option("--log-level", log_level_, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app_.add_option("--data-dir", data_dir_,
                  "The public data sets the experiments replay (default: $TESSERA_DATA_DIR, else "
                  "../shared/data)");
  for (const auto& c : commands_) added_.emplace_back(&c->add_to(app_), c.get());
  add_strict_number_checks(app_);
}

std::string CommandLine::unknown_command(int argc, const char* const* argv) const {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--log-level" || arg == "--data-dir") {
      ++i;  // its value
      continue;
    }
    if (arg.starts_with('-')) continue;
    for (const auto& c : commands_) {
      if (c->name() == arg) return {};
    }
    return std::string(arg);
  }
  return {};
}

int CommandLine::main(int argc, const char* const* argv) {
  if (argc <= 1) {  // what a first try deserves is the overview, not a one-line error
    fmt::print("{}", app_.help());
    return kUsageError;
  }
  // Checked first: CLI11 would answer `tessera nosuch --help` with the main help and status 0.
  if (const std::string name = unknown_command(argc, argv); !name.empty()) {
    std::string known;
    for (const auto& c : commands_)
      known += fmt::format("{}{}", known.empty() ? "" : ", ", c->name());
    fmt::print(stderr, "tessera: error: unknown command '{}'; known: {} (tessera --help)\n", name,
               known);
    return kUsageError;
  }
  try {
    app_.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app_.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "tessera: error: {} (`{} --help` lists the options)\n", e.what(),
               parsed_path(app_));
    return kUsageError;
  }
  if (auto st = core::set_log_level(log_level_); !st) return Outcome(st).finish();
  experiment::set_data_dir(data_dir_);
  for (const auto& [subcommand, command] : added_) {
    if (*subcommand) return command->run().finish();
  }
  return 0;  // unreachable: require_subcommand(1)
}

}  // namespace tessera::cli
