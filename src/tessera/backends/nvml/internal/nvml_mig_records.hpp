#pragma once
// What NvmlMigDevice keeps per GPU instance and per running job, shared by the two files that
// implement it: instance control (nvml_mig_instances.cpp) and job processes (nvml_mig_jobs.cpp).

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "tessera/backends/nvml/nvml_mig_device.hpp"

namespace tessera::cuda {

struct NvmlMigDevice::Instance {
  device::MigInstance info;
  nvml::GpuInstance gi = nullptr;
  nvml::ComputeInstance ci = nullptr;  // null: the GPU instance has no compute instance
  nvml::Device mig = nullptr;          // the MIG device of `ci`
};

struct NvmlMigDevice::Run {
  device::JobRunId id = 0;
  device::MigInstanceId instance = 0;
  workload::BatchJobPtr job;
  device::MigJobObserver* observer = nullptr;
  pid_t pid = -1;                 // also the process group: the job runs in a group of its own
  std::uint64_t start_ticks = 0;  // the process's start (core::read_process), 0 if unread
  nvml::Device mig = nullptr;
  std::int64_t instance_bytes = 0;
  std::int64_t samples = 0;
  std::int64_t peak_used = 0;
  std::int64_t total_seen = 0;  // the MIG device's total memory as NVML reported it
  device::TimerId sample_timer = 0;
  device::TimerId kill_timer = 0;
  bool stopping = false;
  std::string sample_error;
};

}  // namespace tessera::cuda
