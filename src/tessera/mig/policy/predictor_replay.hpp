#pragma once
// Replays a job's memory trajectory into a PeakPredictor, sample by sample, as the scheduler
// would see it, to find when early restart would fire (the predictor experiment).

#include <cstdint>
#include <vector>

#include "tessera/mig/policy/peak_predictor.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::mig {

// One sample per iteration: iteration i's requested and reserved bytes from `trajectory`, read
// through workload::noisy_reading (the simulated MIG GPU's noise model) with z_i standard normal
// from the stream "mig/predictor-replay" of core::RandomStreams(seed) (noise 0: the exact
// trajectory). Returns the first iteration at which a converged prediction's peak_bytes exceeds
// `limit`, or -1 if none does before `iterations`.
std::int64_t first_alarm_iteration(const workload::MemoryTrajectory& trajectory,
                                   std::int64_t iterations,
                                   std::vector<workload::MemoryStep> declared, std::int64_t limit,
                                   PredictorOptions options, double noise, std::uint64_t seed);

// The samples first_alarm_iteration feeds, for tests and other replays: {requested, reserved}.
struct MemorySample {
  std::int64_t iteration = 0;
  std::int64_t requested = 0;
  std::int64_t reserved = 0;
};
std::vector<MemorySample> noisy_samples(const workload::MemoryTrajectory& trajectory,
                                        std::int64_t iterations, double noise, std::uint64_t seed);

}  // namespace tessera::mig
