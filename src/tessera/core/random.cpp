#include "tessera/core/random.hpp"

#include <cmath>
#include <numbers>

namespace tessera::core {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

RandomStream::RandomStream(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& word : s_) word = splitmix64(x);
}

std::uint64_t RandomStream::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double RandomStream::uniform01() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double RandomStream::uniform(double lo, double hi) {
  return lo + (hi - lo) * uniform01();
}

std::uint64_t RandomStream::below(std::uint64_t n) {
  // Lemire's nearly-divisionless method would be faster; rejection keeps it simple and unbiased.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t v;
  do {
    v = next_u64();
  } while (v >= limit);
  return v % n;
}

double RandomStream::exponential(double rate) {
  return -std::log1p(-uniform01()) / rate;
}

double RandomStream::normal(double mean, double stddev) {
  // Box-Muller; one of the pair is dropped so the stream state stays a pure function of calls.
  double u1 = uniform01();
  while (u1 <= 0.0) u1 = uniform01();
  const double u2 = uniform01();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double RandomStream::gamma(double shape, double scale) {
  // Marsaglia and Tsang (2000); shape < 1 uses the boost x * U^(1/shape).
  if (shape < 1.0) {
    double u = uniform01();
    while (u <= 0.0) u = uniform01();
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x;
    double v;
    do {
      x = normal(0.0, 1.0);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

RandomStream RandomStreams::stream(std::string_view name) const {
  std::uint64_t x = seed_ ^ fnv1a(name);
  return RandomStream(splitmix64(x));
}

}  // namespace tessera::core
