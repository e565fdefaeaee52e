#pragma once
// The one place that maps sharing-mode names to factories (no self-registration). A new mode is
// one file plus one line in registry.cpp.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

struct ModeEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<SharingMode> (*make)(const ModeOptions&);
};

const std::vector<ModeEntry>& sharing_modes();
bool is_sharing_mode(std::string_view name);
// The known names, comma-separated, for error messages.
std::string sharing_mode_names();
// Unknown names get an error listing the known ones.
core::Result<std::unique_ptr<SharingMode>> make_sharing_mode(std::string_view name,
                                                             const ModeOptions& options);

}  // namespace tessera::gpu
