#pragma once
// Rounding up for the timing model. Inline: these run several times per simulated kernel.

#include <cmath>
#include <cstdint>

namespace tessera::sim {

// Slack for rounding ratios that are whole numbers up to floating-point error (64 / 32 computed
// as 2.0000000000000004 must not become 3 rounds).
inline constexpr double kRoundingSlack = 1e-9;

// std::ceil is a library call on baseline x86-64 (no SSE4.1 rounding instruction); for the
// non-negative values below 2^52 used here a truncating conversion gives the same result.
inline double ceil_non_negative(double x) {
  if (!(x < 0x1p52)) return std::ceil(x);
  const auto t = static_cast<double>(static_cast<std::int64_t>(x));
  return t < x ? t + 1 : t;
}

inline double ceil_whole(double x) {
  return x <= 0 ? 0 : ceil_non_negative(x - kRoundingSlack);
}

}  // namespace tessera::sim
