#include <algorithm>
#include <cctype>
#include <string>

#include "tessera/mig/runtime/manager.hpp"

namespace tessera::mig {

std::string_view to_string(Scheme s) {
  switch (s) {
    case Scheme::kA: return "A";
    case Scheme::kB: return "B";
    case Scheme::kSequential: return "sequential";
    case Scheme::kStatic: return "static";
  }
  return "?";
}

core::Result<Scheme> parse_scheme(std::string_view text) {
  std::string lower(text);
  std::ranges::transform(lower, lower.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (Scheme s : {Scheme::kA, Scheme::kB, Scheme::kSequential, Scheme::kStatic}) {
    std::string name(to_string(s));
    std::ranges::transform(name, name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == name) return s;
  }
  return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                     "unknown scheme '{}'; known: A, B, sequential, static", text);
}

}  // namespace tessera::mig
