#include "tessera/gpu/mode_settings.hpp"

#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::gpu {

ModeSettings::ModeSettings() {
  for (const auto& entry : sharing_modes()) options_.push_back(entry.defaults());
}

core::Result<ModeSettings> ModeSettings::decode(const core::ConfigNode& mode_options) {
  ModeSettings s;
  TESSERA_TRY(s.apply(mode_options));
  return s;
}

core::Status ModeSettings::apply(const core::ConfigNode& overrides) {
  const auto known = mode_option_keys();
  TESSERA_TRY(overrides.check_keys(known));
  std::vector<std::any> next = options_;
  const auto& modes = sharing_modes();
  for (std::size_t i = 0; i < modes.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ErasedOptions decoded, modes[i].decode(overrides, options_[i]));
    next[i] = std::move(decoded.value);
  }
  options_ = std::move(next);
  return {};
}

std::size_t ModeSettings::index(std::string_view mode) {
  const auto& modes = sharing_modes();
  std::size_t i = 0;
  while (i < modes.size() && modes[i].name != mode) ++i;
  return i;
}

const std::any& ModeSettings::stored(std::string_view mode) const {
  static const std::any none;
  const std::size_t i = index(mode);
  return i < options_.size() ? options_[i] : none;
}

std::optional<std::string> ModeSettings::value(std::string_view key) const {
  const auto& modes = sharing_modes();
  for (std::size_t i = 0; i < modes.size(); ++i) {
    for (auto& setting : modes[i].settings(options_[i])) {
      if (setting.key == key) return std::move(setting.value);
    }
  }
  return std::nullopt;
}

}  // namespace tessera::gpu
