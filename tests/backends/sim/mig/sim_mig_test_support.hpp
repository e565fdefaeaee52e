#pragma once
// What the simulated MIG GPU's tests share: A100-40GB profile IDs and a job without kernels.

#include <cstdint>
#include <memory>

#include "tessera/core/time.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::sim::test {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;
// A100-40GB profile IDs (MIG User Guide): 1g.5gb, 3g.20gb, 4g.20gb, 7g.40gb.
inline constexpr int k1g = 19;
inline constexpr int k3g = 9;
inline constexpr int k4g = 5;
inline constexpr int k7g = 0;

// A job without kernels: `time_full` per iteration on the 7-slice GPU, `serial` of it serial.
inline workload::BatchJobPtr custom_job(std::int64_t iterations, core::Nanos time_full,
                                        double serial = 0) {
  auto job = std::make_shared<workload::BatchJob>();
  job->name = "custom";
  job->iterations = iterations;
  job->memory.base_bytes = kGiB;
  job->iteration_time_full = time_full;
  job->serial_fraction = serial;
  return job;
}

}  // namespace tessera::sim::test
