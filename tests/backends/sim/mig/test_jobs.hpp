#pragma once
// Batch jobs the simulated MIG GPU's tests share.

#include <cstdint>
#include <memory>

#include "tessera/core/time.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::sim::test {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

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
