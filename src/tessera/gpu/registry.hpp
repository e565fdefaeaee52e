#pragma once
// The one place that lists the sharing modes (no self-registration). A new mode is its folder
// under modes/ (the mode, its typed options and their declarations) plus one line in
// registry.cpp; see mode_entry.hpp for what an entry owns.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/gpu/mode_entry.hpp"
#include "tessera/gpu/mode_settings.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

const std::vector<ModeEntry>& sharing_modes();
bool is_sharing_mode(std::string_view name);
// The known names, comma-separated, for error messages.
std::string sharing_mode_names();
// Every key some mode declares, once each, in registry order: the keys of `mode_options:`.
std::vector<std::string_view> mode_option_keys();
// Each mode with its summary and each option with its default, meaning and basis, for
// `tessera list`.
std::string sharing_modes_listing();
// Unknown names get an error listing the known ones.
core::Result<std::unique_ptr<SharingMode>> make_sharing_mode(std::string_view name,
                                                             const ModeSettings& settings = {});

}  // namespace tessera::gpu
