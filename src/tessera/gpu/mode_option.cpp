#include "tessera/gpu/mode_option.hpp"

#include <fmt/format.h>

namespace tessera::gpu {

std::string format_option(OptionKind kind, const OptionValue& value) {
  if (kind == OptionKind::kDuration) {
    return fmt::format("{:g} us", static_cast<double>(std::get<core::Nanos>(value)) / 1e3);
  }
  if (kind == OptionKind::kSwitch) return std::get<bool>(value) ? "on" : "off";
  if (kind == OptionKind::kPercent) return fmt::format("{:g}%", std::get<double>(value));
  return fmt::format("{:g}", std::get<double>(value));
}

core::Result<OptionValue> read_option(const core::ConfigNode& node, OptionKind kind) {
  if (kind == OptionKind::kDuration) {
    TESSERA_ASSIGN_OR_RETURN(const core::Nanos v, node.as_duration());
    return v;
  }
  if (kind == OptionKind::kSwitch) {
    TESSERA_ASSIGN_OR_RETURN(const bool v, node.as_bool());
    return v;
  }
  TESSERA_ASSIGN_OR_RETURN(const double v, node.as_double());
  return v;
}

}  // namespace tessera::gpu
