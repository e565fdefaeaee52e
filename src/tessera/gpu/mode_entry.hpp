#pragma once
// A sharing mode's registry entry: its name, a one-line summary, the options it declares, how it
// decodes and validates them from a scenario's `mode_options:` map, and its factory. Each entry
// owns its options, as a plugin of Kubernetes' scheduler framework decodes its own args: the
// scenario parser, the runner, the experiments and `tessera list` go through entries only.
//
// The decoded options are held type-erased (std::any holding the mode's typed options), so one
// gpu::ModeSettings (mode_settings.hpp) can carry every mode's; mode_entry() below builds an
// entry from the mode's typed pieces.

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/core/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/mode_option.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

// One option's value as its kind prints it.
struct OptionSetting {
  std::string_view key;
  std::string value;
};

// One mode's decoded options, type-erased. Not a bare std::any inside a Result, and not an
// aggregate: std::any is constructible from anything, the expected holding it included, so clang
// cannot check the converting constructors of std::expected<std::any, E> (or of an expected of
// an aggregate around it, which C++20 lets parentheses initialize).
struct ErasedOptions {
  ErasedOptions() = default;
  std::any value;
};

struct ModeEntry {
  std::string_view name;
  std::string_view summary;
  std::vector<OptionInfo> options;  // in declaration order
  // Every option at its default.
  std::function<std::any()> defaults;
  // The keys this mode declares, from a scenario's `mode_options:` map (keys of other modes are
  // theirs to read), over `from` (options of this mode, or empty for the defaults); absent ones
  // keep their values, an invalid one is an error at its place.
  std::function<core::Result<ErasedOptions>(const core::ConfigNode& mode_options,
                                            const std::any& from)>
      decode;
  // Decoded options (from `defaults` or `decode`) as key and printed value, in declaration order.
  std::function<std::vector<OptionSetting>(const std::any& options)> settings;
  // The options a mode this entry made runs with, as `settings` prints them; empty for a mode it
  // did not make.
  std::function<std::vector<OptionSetting>(const SharingMode& mode)> settings_of;
  std::function<std::unique_ptr<SharingMode>(const std::any& options)> make;
};

// An entry for `Mode`, which has no options: made as `Mode()`.
template <class Mode>
ModeEntry mode_entry(std::string_view name, std::string_view summary) {
  return ModeEntry{
      .name = name,
      .summary = summary,
      .options = {},
      .defaults = [] { return std::any(); },
      .decode = [](const core::ConfigNode&, const std::any&) -> core::Result<ErasedOptions> {
        return ErasedOptions{};
      },
      .settings = [](const std::any&) { return std::vector<OptionSetting>{}; },
      .settings_of = [](const SharingMode&) { return std::vector<OptionSetting>{}; },
      .make = [](const std::any&) -> std::unique_ptr<SharingMode> {
        return std::make_unique<Mode>();
      },
  };
}

// An entry for `Mode` with options `Options`, declared by `fields`. Without `make`, the mode is
// `Mode(options)`; a Mode that needs more must be given `make`. The Mode exposes its options as
// `const Options& options() const`, for settings_of.
template <class Mode, class Options>
ModeEntry mode_entry(
    std::string_view name, std::string_view summary, std::vector<OptionField<Options>> fields,
    std::type_identity_t<std::function<std::unique_ptr<SharingMode>(const Options&)>> make = {}) {
  if constexpr (std::is_constructible_v<Mode, const Options&>) {
    if (!make) {
      make = [](const Options& o) -> std::unique_ptr<SharingMode> {
        return std::make_unique<Mode>(o);
      };
    }
  }
  auto render = [fields](const Options& o) {
    std::vector<OptionSetting> out;
    for (const auto& f : fields) out.push_back({f.key, format_option(f.kind, f.get(o))});
    return out;
  };
  std::vector<OptionInfo> options;
  for (const auto& f : fields) options.push_back(f.info());
  return ModeEntry{
      .name = name,
      .summary = summary,
      .options = std::move(options),
      .defaults = [] { return std::any(Options{}); },
      .decode = [fields](const core::ConfigNode& n,
                         const std::any& from) -> core::Result<ErasedOptions> {
        Options o = from.has_value() ? std::any_cast<const Options&>(from) : Options{};
        for (const auto& f : fields) TESSERA_TRY(f.decode(n, o));
        ErasedOptions erased;
        erased.value = std::move(o);
        return erased;
      },
      .settings = [render](const std::any& o) { return render(std::any_cast<const Options&>(o)); },
      .settings_of =
          [render](const SharingMode& mode) {
            const auto* made = dynamic_cast<const Mode*>(&mode);
            return made ? render(made->options()) : std::vector<OptionSetting>{};
          },
      .make = [make = std::move(make)](
                  const std::any& o) { return make(std::any_cast<const Options&>(o)); },
  };
}

}  // namespace tessera::gpu
