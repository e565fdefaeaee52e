#pragma once
// How a sharing mode declares one of its options: the key under a scenario's `mode_options:`, its
// kind (which fixes how it is read and printed), what it means, the model assumption or source
// its default rests on, its valid range, and the field of the mode's typed options it fills. The
// registry reads, validates, prints and lists every option through these declarations, so each
// of these is stated once, beside the mode.

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "tessera/core/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/core/try.hpp"

namespace tessera::gpu {

enum class OptionKind {
  kDuration,  // "250us" in a scenario, printed "250 us"
  kSwitch,    // true or false, printed "on" or "off"
  kNumber,    // printed as "{:g}"
  kPercent,   // a number of percent, printed as "{:g}%"
};

// kDuration holds core::Nanos, kSwitch bool, kNumber and kPercent double.
using OptionValue = std::variant<core::Nanos, bool, double>;

// How `kind` prints `value`, the one format of the experiments' assumption tables, `tessera list`
// and a mode's key=value settings.
std::string format_option(OptionKind kind, const OptionValue& value);

// Reads `node` as `kind` expects (a duration with a unit, a bool, a number).
core::Result<OptionValue> read_option(const core::ConfigNode& node, OptionKind kind);

struct OptionDoc {
  std::string_view meaning;  // one line
  std::string_view basis;    // the model assumption or source its default rests on
};

// What the listing and the experiments know of an option, whatever mode declares it.
struct OptionInfo {
  std::string_view key;
  OptionKind kind;
  std::string default_value;  // as `kind` prints it
  OptionDoc doc;
};

// One option of a mode whose options are an `Options` (default-constructed: every default).
// Made by the helpers below, which keep `kind` and the field's type in step.
template <class Options>
struct OptionField {
  std::string_view key;
  OptionKind kind;
  std::variant<core::Nanos Options::*, bool Options::*, double Options::*> member;
  OptionDoc doc;
  // The whole message for a value out of range, empty for one in range; unset: every value the
  // kind reads is valid.
  std::function<std::string(const OptionValue&)> invalid;

  OptionValue get(const Options& options) const {
    return std::visit([&](auto m) -> OptionValue { return options.*m; }, member);
  }

  OptionInfo info() const {
    static const Options defaults{};
    return {key, kind, format_option(kind, get(defaults)), doc};
  }

  // Sets the field from `key` in `mode_options` when it is there; an error names the key's place.
  core::Status decode(const core::ConfigNode& mode_options, Options& into) const {
    const auto node = mode_options.find(key);
    if (!node) return {};
    TESSERA_ASSIGN_OR_RETURN(const OptionValue value, read_option(*node, kind));
    if (invalid) {
      if (std::string why = invalid(value); !why.empty()) {
        return std::unexpected(node->error(why));
      }
    }
    std::visit(
        [&](auto m) {
          using T = std::remove_reference_t<decltype(into.*m)>;
          into.*m = std::get<T>(value);
        },
        member);
    return {};
  }
};

// A range check: the message for an out-of-range value, empty for a valid one.
template <class T>
using OptionCheck = std::string (*)(T);

namespace detail {
template <class T>
std::function<std::string(const OptionValue&)> checked(OptionCheck<T> check) {
  if (check == nullptr) return nullptr;
  return [check](const OptionValue& v) { return check(std::get<T>(v)); };
}
}  // namespace detail

template <class Options>
OptionField<Options> duration_option(std::string_view key, core::Nanos Options::*member,
                                     OptionDoc doc, OptionCheck<core::Nanos> check = nullptr) {
  return {key, OptionKind::kDuration, member, doc, detail::checked(check)};
}

template <class Options>
OptionField<Options> switch_option(std::string_view key, bool Options::*member, OptionDoc doc) {
  return {key, OptionKind::kSwitch, member, doc, nullptr};
}

template <class Options>
OptionField<Options> number_option(std::string_view key, double Options::*member, OptionDoc doc,
                                   OptionCheck<double> check = nullptr) {
  return {key, OptionKind::kNumber, member, doc, detail::checked(check)};
}

template <class Options>
OptionField<Options> percent_option(std::string_view key, double Options::*member, OptionDoc doc,
                                    OptionCheck<double> check = nullptr) {
  return {key, OptionKind::kPercent, member, doc, detail::checked(check)};
}

}  // namespace tessera::gpu
