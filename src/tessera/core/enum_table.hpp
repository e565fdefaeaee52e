#pragma once
// One enum's names, both ways, from one table: to_string, parse, and the "expected a, b or c" of
// its error message all read the same entries, so a new value is one entry.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::core {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
class EnumTable {
 public:
  // `what` names the enum in errors ("preemption method"); entries are listed in their order.
  constexpr EnumTable(std::string_view what, Domain domain, std::array<EnumName<E>, N> entries)
      : what_(what), domain_(domain), entries_(entries) {}

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
      if (e.name == name) return e.value;
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

  constexpr const std::array<EnumName<E>, N>& entries() const { return entries_; }

 private:
  std::string_view what_;
  Domain domain_;
  std::array<EnumName<E>, N> entries_;
};

}  // namespace tessera::core
