#pragma once
// Logging goes through spdlog. Libraries log through tessera::core::logger(); the CLI sets the
// level. Simulation output never goes through the log (it is data, written by metrics).

#include <spdlog/spdlog.h>

#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::core {

spdlog::logger& logger();
// Accepts trace, debug, info, warn, error, off.
Status set_log_level(std::string_view level);

}  // namespace tessera::core
