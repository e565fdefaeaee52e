#pragma once
// What the simulated MIG GPU's tests share: an A100-40GB SimMig with its profile IDs, an
// observer that records what it is told, a job without kernels and two GEMM jobs.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backends/sim/mig/sim_mig.hpp"
#include "tessera/core/time.hpp"
#include "tessera/workload/jobs/batch_job.hpp"
#include "tessera/workload/kernels/gemm_shapes.hpp"

namespace tessera::sim::test {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;
// A100-40GB profile IDs (MIG User Guide): 1g.5gb, 3g.20gb, 4g.20gb, 7g.40gb.
inline constexpr int k1g = 19;
inline constexpr int k3g = 9;
inline constexpr int k4g = 5;
inline constexpr int k7g = 0;

struct Recorder final : device::MigJobObserver {
  std::vector<device::JobSample> samples;
  std::vector<device::JobExit> exits;
  std::function<void(const device::JobSample&)> on_each_sample;
  void on_sample(const device::JobSample& s) override {
    samples.push_back(s);
    if (on_each_sample) on_each_sample(s);
  }
  void on_exit(const device::JobExit& e) override { exits.push_back(e); }
};

inline SimMigOptions no_delays() {
  SimMigOptions o;
  o.create_time = 0;
  o.destroy_time = 0;
  o.job_start_time = 0;
  o.sample_noise = 0;
  return o;
}

inline std::unique_ptr<SimMig> make(Engine& engine, SimMigOptions o = no_delays()) {
  auto spec = hw::find_gpu("a100-40gb");
  EXPECT_TRUE(spec.has_value());
  auto mig = SimMig::create(engine, spec.value(), o);
  EXPECT_TRUE(mig.has_value()) << (mig ? "" : mig.error().message());
  return std::move(mig.value());
}

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

// An iteration of `repeat` GEMMs of m x n x k (16-bit operands).
inline std::function<workload::KernelSequence(std::int64_t)> gemms(std::int64_t m, std::int64_t n,
                                                                   std::int64_t k, int repeat) {
  return [=](std::int64_t) {
    workload::KernelSequence seq;
    seq.groups.push_back(
        {.kernels = {workload::make_gemm(workload::dense_gemm("gemm", m, n, k, 2))},
         .repeat = repeat});
    return seq;
  };
}

// One large GEMM per iteration: compute-bound at any slice size.
inline workload::BatchJobPtr gemm_job(std::int64_t iterations = 3) {
  auto job = std::make_shared<workload::BatchJob>();
  job->name = "gemm";
  job->kind = workload::JobKind::kCustom;
  job->iterations = iterations;
  job->memory.base_bytes = kGiB;
  job->work.key = "gemm-8192";
  job->work.build = gemms(8192, 8192, 8192, 1);
  return job;
}

// GEMMs of a few dozen tiles (512 x 512 x 1024), `repeat` per iteration: they leave most of a
// 7-slice instance idle.
inline workload::BatchJobPtr small_gemm_job(std::string key, std::int64_t iterations = 3,
                                            int repeat = 4) {
  auto job = std::make_shared<workload::BatchJob>(*gemm_job(iterations));
  job->name = key;
  job->work.key = std::move(key);
  job->work.build = gemms(512, 512, 1024, repeat);
  return job;
}

}  // namespace tessera::sim::test
