#include "tessera/mig/policy/predictor_replay.hpp"

#include <algorithm>
#include <utility>

#include "tessera/core/random.hpp"

namespace tessera::mig {

std::vector<MemorySample> noisy_samples(const workload::MemoryTrajectory& trajectory,
                                        std::int64_t iterations, double noise, std::uint64_t seed) {
  core::RandomStream rng = core::RandomStreams(seed).stream("mig/predictor-replay");
  std::vector<MemorySample> out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(iterations, 0)));
  for (std::int64_t i = 0; i < iterations; ++i) {
    const double z = noise > 0 ? rng.normal(0, 1) : 0;
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
