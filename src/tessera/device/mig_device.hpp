#pragma once
// The backend interface of one MIG GPU: create and destroy GPU instances at chosen placements,
// run jobs on them, and report each job's memory as it runs and how it ended. The MIG manager
// (src/tessera/mig) drives a GPU only through this, so the same scheduler runs on the simulated MIG
// device (sim::SimMig) and on a real one through NVML (cuda::NvmlMigDevice).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/executor.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::device {

using MigInstanceId = std::uint32_t;
using JobRunId = std::uint64_t;

// One GPU instance with one compute instance spanning all of it.
struct MigInstance {
  MigInstanceId id = 0;  // the backend's handle (NVML: the GPU instance ID)
  int profile_id = 0;    // hw::MigProfile::id
  int start = 0;         // first memory slice
  std::string uuid;      // what CUDA_VISIBLE_DEVICES takes ("MIG-..."); synthetic in the simulator
  std::int64_t memory_bytes = 0;
  int sms = 0;
};

struct MigCapabilities {
  bool reconfigure = false;     // instances can be created and destroyed
  bool memory_samples = false;  // a running job's memory is reported (JobSample)
  bool energy = false;          // stats().energy_joules is measured
  // Jobs one instance runs at once: above 1, a job may start on an instance that runs others,
  // and they share it under the backend's intra-GPU sharing mode (and its memory).
  int jobs_per_instance = 1;
};

// A running job's memory at the end of an iteration (simulator) or at a sampling instant (a real
// GPU, where `iteration` counts samples).
struct JobSample {
  JobRunId run = 0;
  std::int64_t iteration = 0;
  std::int64_t requested_bytes = 0;
  std::int64_t reserved_bytes = 0;
  core::Nanos at = 0;
};

enum class JobExitKind {
  kCompleted,
  kOutOfMemory,  // reserved memory exceeded the instance
  kKilled,       // stop_job
  kFailed,       // anything else; JobExit::message says what
};
std::string_view to_string(JobExitKind k);

struct JobExit {
  JobRunId run = 0;
  JobExitKind kind = JobExitKind::kCompleted;
  std::int64_t iterations_done = 0;
  std::int64_t peak_reserved_bytes = 0;
  core::Nanos at = 0;
  std::string message;
};

class MigJobObserver {
 public:
  virtual ~MigJobObserver() = default;
  virtual void on_sample(const JobSample& sample) = 0;
  virtual void on_exit(const JobExit& exit) = 0;
};

// The operating-system process group a job runs as, where a backend runs jobs as processes: what
// a restart needs to find the job again after the manager died (mig::kill_orphans).
struct JobProcess {
  std::int64_t process_group = 0;  // also the leader's process ID
  // The leader's start time in clock ticks since boot (/proc/<pid>/stat field 22): with the boot
  // ID it tells the job's processes from later ones that reuse the number.
  std::uint64_t start_ticks = 0;
};

struct MigDeviceStats {
  core::Nanos elapsed = 0;
  double energy_joules = 0;  // whole GPU, idle power included
  std::int64_t instances_created = 0;
  std::int64_t instances_destroyed = 0;
};

class MigDevice {
 public:
  virtual ~MigDevice() = default;

  virtual const hw::MigGeometry& geometry() const = 0;
  virtual MigCapabilities capabilities() const = 0;
  virtual Executor& executor() = 0;

  // The instances that exist now, ascending by start.
  virtual std::vector<MigInstance> instances() const = 0;
  // Creates a GPU instance of `profile_id` at memory slice `start` and one compute instance that
  // spans it. On any failure nothing is left behind: a GPU instance whose compute instance could
  // not be created is destroyed before the error is returned.
  virtual core::Result<MigInstance> create_instance(int profile_id, int start) = 0;
  // Fails with kFailedPrecondition while a job runs on it.
  virtual core::Status destroy_instance(MigInstanceId id) = 0;

  // Starts `job` from its first iteration on an instance that runs fewer jobs than
  // capabilities().jobs_per_instance (an idle one where that is 1). Samples and the exit are
  // reported to `observer` from the executor's loop (never from inside this call); the observer
  // must outlive the run.
  virtual core::Result<JobRunId> start_job(MigInstanceId instance, workload::BatchJobPtr job,
                                           MigJobObserver& observer) = 0;
  // Stops a running job; its exit is reported as kKilled. Stopping a finished run is a no-op.
  virtual core::Status stop_job(JobRunId run) = 0;
  // The process group of a running job; none where jobs are not processes (the simulator).
  virtual std::optional<JobProcess> job_process(JobRunId /*run*/) const { return std::nullopt; }

  // Runs the backend's event loop (timers, job progress) until `done()` is true after an event,
  // or nothing is left to happen. The simulator runs its engine; a real backend polls its
  // processes and sleeps between events.
  virtual core::Status run(const std::function<bool()>& done) = 0;

  virtual MigDeviceStats stats() const = 0;
};

}  // namespace tessera::device
