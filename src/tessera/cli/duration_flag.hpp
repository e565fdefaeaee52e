#pragma once
// --duration, the same on every command that takes one: a positive duration with a unit (30s, 1h).

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::cli {

// Adds --duration to `cmd`, held as text so that a malformed value is tessera's error, not CLI11's.
void add_duration_option(CLI::App& cmd, std::string& text, std::string_view help);

// The duration `text` names; nullopt when the flag was not given (empty text).
core::Result<std::optional<core::Nanos>> parse_duration_flag(const std::string& text);

}  // namespace tessera::cli
