#pragma once
// Seeded, named random streams. Each consumer asks for its own stream by name ("arrivals/chat",
// "lengths/chat"), so adding a consumer never shifts the numbers another one sees. The samplers
// are written out here (not std::*_distribution, whose algorithms differ between standard
// libraries) so the same seed gives the same numbers with any compiler.

#include <cstdint>
#include <string_view>

namespace tessera::core {

class RandomStream {
 public:
  explicit RandomStream(std::uint64_t seed);

  std::uint64_t next_u64();
  double uniform01();                    // [0, 1)
  double uniform(double lo, double hi);  // [lo, hi)
  std::uint64_t below(std::uint64_t n);  // [0, n), n > 0
  double exponential(double rate);       // mean 1/rate, rate > 0
  double normal(double mean, double stddev);
  double gamma(double shape, double scale);  // mean shape*scale, shape > 0, scale > 0

 private:
  std::uint64_t s_[4];  // xoshiro256** state
};

class RandomStreams {
 public:
  explicit RandomStreams(std::uint64_t seed) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  // The same (seed, name) always gives a stream that produces the same sequence.
  RandomStream stream(std::string_view name) const;

 private:
  std::uint64_t seed_;
};

}  // namespace tessera::core
