#pragma once
// One subcommand of `tessera`: its name and summary, how it adds its options, and how it runs.
// commands.cpp holds the one table of them; main adds each to the command line and runs the one
// that was named.

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::cli {

// What a command gives back: an exit status, or an error that main prints as "tessera: error: ..."
// before exiting with the error's status. A command returning core::Status converts as is:
// success is exit status 0, an error exits with 1.
class Outcome {
 public:
  Outcome() = default;
  Outcome(core::Status status);                   // NOLINT: the common case converts
  Outcome(std::unexpected<core::Error> failure);  // NOLINT: TESSERA_TRY and failf return these
  // A run that finished with a status of its own (determinism's 1: outputs differ).
  static Outcome exit(int status);
  // A failure with another exit status than 1 (determinism's 2 for usage errors).
  static Outcome failure(core::Error error, int exit_status);

  // Prints the error, if any, to stderr and returns the exit status.
  int finish() const;

 private:
  int exit_status_ = 0;
  std::optional<core::Error> error_;
};

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string_view name() const = 0;
  // Adds the subcommand and its options to `app`.
  virtual CLI::App& add_to(CLI::App& app) = 0;
  virtual Outcome run() = 0;
};

// A command whose options live in a Flags struct with a `CLI::App* command` member: the table's
// row for it is its name, summary, option adder and run function.
template <class Flags>
class FlagsCommand final : public Command {
 public:
  using AddOptions = void (*)(CLI::App&, Flags&);
  using Run = Outcome (*)(const Flags&);

  FlagsCommand(std::string_view name, std::string_view summary, AddOptions add, Run run)
      : name_(name), summary_(summary), add_(add), run_(run) {}

  std::string_view name() const override { return name_; }
  CLI::App& add_to(CLI::App& app) override {
    flags_.command = app.add_subcommand(std::string(name_), std::string(summary_));
    add_(*flags_.command, flags_);
    return *flags_.command;
  }
  Outcome run() override { return run_(flags_); }

 private:
  std::string_view name_;
  std::string_view summary_;
  AddOptions add_;
  Run run_;
  Flags flags_;
};

template <class Flags>
std::unique_ptr<Command> command(std::string_view name, std::string_view summary,
                                 typename FlagsCommand<Flags>::AddOptions add,
                                 typename FlagsCommand<Flags>::Run run) {
  return std::make_unique<FlagsCommand<Flags>>(name, summary, add, run);
}

// The one table of `tessera` subcommands, in the order --help lists them.
std::vector<std::unique_ptr<Command>> make_commands();

}  // namespace tessera::cli
