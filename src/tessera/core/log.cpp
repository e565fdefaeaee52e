#include "tessera/core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace tessera::core {

spdlog::logger& logger() {
  // Logs go to stderr so stdout stays clean for tables and JSON.
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("tessera");
    l->set_pattern("[%l] %v");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return *instance;
}

Status set_log_level(std::string_view level) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return failf(Domain::kCore, Code::kInvalidArgument,
                 "unknown log level '{}': use trace, debug, info, warn, error or off", level);
  }
  logger().set_level(parsed);
  return {};
}

}  // namespace tessera::core
