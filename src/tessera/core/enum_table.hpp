#pragma once
// One enum's names, both ways, from one table: to_string, parse, the "expected a, b or c" of its
// error message and the lines of a listing all read the same entries, so a new value is one entry.
// A registry of policies chosen by name (MIG schemes, preemption methods) is such a table whose
// entries carry a one-line summary.

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::core {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
  std::string_view summary = {};  // one line for listings; empty for a plain enum
};

enum class NameCase : std::uint8_t { kExact, kIgnored };

template <class E, std::size_t N>
class EnumTable {
 public:
  // `what` names the enum in errors ("preemption method"); entries are listed in their order.
  constexpr EnumTable(std::string_view what, Domain domain, std::array<EnumName<E>, N> entries,
                      NameCase name_case = NameCase::kExact)
      : what_(what), domain_(domain), entries_(entries), case_(name_case) {}

  // The value's name; "?" for a value the table does not hold.
  constexpr std::string_view to_string(E value) const {
    for (const auto& e : entries_) {
      if (e.value == value) return e.name;
    }
    return "?";
  }

  // An unknown name is an error naming it and every known one: "<what> 'x': expected a, b or c".
  Result<E> parse(std::string_view name) const {
    for (const auto& e : entries_) {
      if (same(e.name, name)) return e.value;
    }
    return failf(domain_, Code::kInvalidArgument, "{} '{}': expected {}", what_, name, names());
  }

  // "a, b or c".
  std::string names() const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += entries_[i].name;
    }
    return out;
  }

  // One line per entry, "  name  summary", for `tessera list`.
  std::string listing() const {
    std::string out;
    for (const auto& e : entries_) out += fmt::format("  {:<18} {}\n", e.name, e.summary);
    return out;
  }

  constexpr const std::array<EnumName<E>, N>& entries() const { return entries_; }

 private:
  constexpr bool same(std::string_view a, std::string_view b) const {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i] && (case_ == NameCase::kExact || lower(a[i]) != lower(b[i]))) return false;
    }
    return true;
  }
  static constexpr char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }

  std::string_view what_;
  Domain domain_;
  std::array<EnumName<E>, N> entries_;
  NameCase case_;
};

}  // namespace tessera::core
