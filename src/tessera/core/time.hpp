#pragma once
// Time is integer nanoseconds everywhere: simulated and real clocks share one representation so
// a run is exactly reproducible (no floating-point drift in event order).

#include <cstdint>
#include <limits>

namespace tessera::core {

using Nanos = std::int64_t;  // a duration or a point in time, in nanoseconds

inline constexpr Nanos kNanosPerMicro = 1'000;
inline constexpr Nanos kNanosPerMilli = 1'000'000;
inline constexpr Nanos kNanosPerSecond = 1'000'000'000;
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

// Rounds to the nearest nanosecond, halves away from zero: truncation would turn 1.005 ms
// (1004999.9999999999 ns in binary floating point) into 1004999 ns.
constexpr Nanos round_to_nanos(double ns) {
  return static_cast<Nanos>(ns < 0 ? ns - 0.5 : ns + 0.5);
}

constexpr Nanos micros(double us) {
  return round_to_nanos(us * kNanosPerMicro);
}
constexpr Nanos millis(double ms) {
  return round_to_nanos(ms * kNanosPerMilli);
}
constexpr Nanos seconds(double s) {
  return round_to_nanos(s * kNanosPerSecond);
}

constexpr double to_seconds(Nanos t) {
  return static_cast<double>(t) / kNanosPerSecond;
}
constexpr double to_millis(Nanos t) {
  return static_cast<double>(t) / kNanosPerMilli;
}
constexpr double to_micros(Nanos t) {
  return static_cast<double>(t) / kNanosPerMicro;
}

}  // namespace tessera::core
