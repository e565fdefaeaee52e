#pragma once
// Small text helpers shared by the flag and file parsers.

#include <string_view>
#include <vector>

namespace tessera::core {

// The pieces of `s` between `sep`s, empty ones included ("a,,b" gives "a", "", "b"; "" gives
// one empty piece). The pieces view `s`.
inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace tessera::core
