#pragma once
// Decoding a mode's options through its registry entry, as a scenario's `mode_options:` would.

#include <gtest/gtest.h>

#include <any>
#include <string>
#include <string_view>

#include "tessera/core/config.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::gpu::test {

inline const ModeEntry& entry_of(std::string_view mode) {
  for (const auto& entry : sharing_modes()) {
    if (entry.name == mode) return entry;
  }
  ADD_FAILURE() << "no sharing mode '" << mode << "'";
  return sharing_modes().front();
}

// `yaml` is the `mode_options:` map; errors name "opts.yaml".
template <class Options>
core::Result<Options> decode_options(std::string_view mode, std::string_view yaml) {
  TESSERA_ASSIGN_OR_RETURN(const auto node, core::ConfigNode::parse(yaml, "opts.yaml"));
  TESSERA_ASSIGN_OR_RETURN(const ErasedOptions options, entry_of(mode).decode(node, std::any()));
  return std::any_cast<Options>(options.value);
}

}  // namespace tessera::gpu::test
