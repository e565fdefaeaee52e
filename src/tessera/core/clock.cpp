#include "tessera/core/clock.hpp"

#include <chrono>

namespace tessera::core {

namespace {
Nanos steady_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

SystemClock::SystemClock() : origin_(steady_nanos()) {}

Nanos SystemClock::now() const {
  return steady_nanos() - origin_;
}

}  // namespace tessera::core
