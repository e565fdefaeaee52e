#pragma once
// A job file's jobs with their GPU's MIG geometry and a kernel model to time them, as the MIG
// bound and best-schedule tests build them from YAML text.

#include <gtest/gtest.h>

#include <string>

#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"

namespace tessera::experiment {

struct JobsOnGpu {
  mig::JobsFile jobs;
  hw::MigGeometry geometry;
  sim::SliceCostModel model;
};

inline JobsOnGpu load_jobs_on_gpu(const std::string& text) {
  auto jobs = mig::parse_jobs(text, "test.yaml");
  EXPECT_TRUE(jobs.has_value()) << jobs.error().message();
  auto spec = hw::find_gpu(jobs->gpu);
  auto geometry = hw::find_mig_geometry(jobs->gpu);
  return JobsOnGpu{
      .jobs = *jobs, .geometry = *geometry, .model = sim::SliceCostModel(*spec, *geometry)};
}

}  // namespace tessera::experiment
