#include "tessera/cli/command.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace tessera::cli {

Outcome::Outcome(core::Status status) {
  if (!status) {
    exit_status_ = 1;
    error_ = std::move(status.error());
  }
}

Outcome::Outcome(std::unexpected<core::Error> failure)
    : exit_status_(1), error_(std::move(failure.error())) {}

Outcome Outcome::exit(int status) {
  Outcome o;
  o.exit_status_ = status;
  return o;
}

Outcome Outcome::failure(core::Error error, int exit_status) {
  Outcome o;
  o.exit_status_ = exit_status;
  o.error_ = std::move(error);
  return o;
}

int Outcome::finish() const {
  if (error_) fmt::print(stderr, "tessera: error: {}\n", error_->message());
  return exit_status_;
}

}  // namespace tessera::cli
