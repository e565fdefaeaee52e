#pragma once
// Every registered sharing mode's options, decoded from one `mode_options:` map, the scenario
// format: a key is valid when some mode declares it, modes may share a key (cogpu and tpot-first
// the remap ones), and each mode's entry reads and validates its own keys. A scenario holds one,
// decoded when it is parsed, so a bad value fails there, at its line; the runner makes each
// mode from it, and a study changes a mode's typed options in it.

#include <any>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/config.hpp"
#include "tessera/core/error.hpp"

namespace tessera::gpu {

class ModeSettings {
 public:
  ModeSettings();  // every mode at its defaults

  // An unknown key is an error naming it and the known ones; a bad value, one at the value.
  static core::Result<ModeSettings> decode(const core::ConfigNode& mode_options);
  // The keys of `overrides` (a `mode_options:` map) over these settings; on an error, nothing
  // changes.
  core::Status apply(const core::ConfigNode& overrides);

  // The typed options of `mode`, e.g. of<LithosOptions>("lithos"). Throws (std::out_of_range,
  // std::bad_any_cast) when `mode` is not registered or its options are another type: a
  // programming error, which the registry's tests would show.
  template <class Options>
  Options& of(std::string_view mode) {
    return std::any_cast<Options&>(options_.at(index(mode)));
  }
  template <class Options>
  const Options& of(std::string_view mode) const {
    return std::any_cast<const Options&>(options_.at(index(mode)));
  }

  // `mode`'s options type-erased, as its registry entry reads them; empty if `mode` is unknown.
  const std::any& stored(std::string_view mode) const;

  // `key`'s value as its kind prints it ("250 us", "on", "0.1", "100%"), from the first mode that
  // declares it; nullopt when none does.
  std::optional<std::string> value(std::string_view key) const;

 private:
  static std::size_t index(std::string_view mode);  // sharing_modes().size() when unknown

  std::vector<std::any> options_;  // one per sharing_modes() entry, in its order
};

}  // namespace tessera::gpu
