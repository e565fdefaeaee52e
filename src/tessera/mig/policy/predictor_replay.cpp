#include "tessera/mig/policy/predictor_replay.hpp"

#include <cmath>
#include <numbers>
#include <random>
#include <utility>

namespace tessera::mig {

namespace {

// A uniform draw in (0, 1) from the top 53 bits, and Box-Muller on our own, so that the samples
// do not depend on the standard library's distribution algorithms (implementation-defined).
double uniform_open(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(std::mt19937_64& rng) {
  const double u1 = uniform_open(rng);
  const double u2 = uniform_open(rng);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace

std::vector<MemorySample> noisy_samples(const workload::MemoryTrajectory& trajectory,
                                        std::int64_t iterations, double noise, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<MemorySample> out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(iterations, 0)));
  for (std::int64_t i = 0; i < iterations; ++i) {
    const double z = noise > 0 ? standard_normal(rng) : 0;
    const workload::MemoryReading m = workload::noisy_reading(trajectory, i, iterations, noise, z);
    out.push_back({.iteration = i, .requested = m.requested, .reserved = m.reserved});
  }
  return out;
}

std::int64_t first_alarm_iteration(const workload::MemoryTrajectory& trajectory,
                                   std::int64_t iterations,
                                   std::vector<workload::MemoryStep> declared, std::int64_t limit,
                                   PredictorOptions options, double noise, std::uint64_t seed) {
  PeakPredictor predictor(iterations, std::move(declared), options);
  for (const MemorySample& s : noisy_samples(trajectory, iterations, noise, seed)) {
    predictor.add(s.iteration, s.requested, s.reserved);
    const auto p = predictor.predict();
    if (p && p->converged && p->peak_bytes > limit) return s.iteration;
  }
  return -1;
}

}  // namespace tessera::mig
