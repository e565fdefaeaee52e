// Uses the installed headers and libraries: makes a sharing mode by name from the registry and
// shows that an unknown name is refused.
#include <fmt/format.h>

#include "tessera/core/version.hpp"
#include "tessera/gpu/registry.hpp"

int main() {
  using namespace tessera;
  auto mode = gpu::make_sharing_mode("time-slicing");
  if (!mode) {
    fmt::print(stderr, "{}\n", mode.error().message());
    return 1;
  }
  fmt::print("tessera {}: sharing mode {}\n", core::kVersion, (*mode)->name());
  auto unknown = gpu::make_sharing_mode("no-such-mode");
  fmt::print("no-such-mode: {}\n", unknown ? "made" : unknown.error().message());
  return 0;
}
