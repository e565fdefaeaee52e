#pragma once
// The MIG manager: runs a queue of batch jobs on one MIG GPU through device::MigDevice. It asks
// the scheduler (scheduler.hpp, pure) what to start where, carries its plans out (destroy idle
// instances, create, start), feeds every job's memory samples to its peak predictor, restarts a
// job on the next larger slice when it runs out of memory, and early, before the failure, when the
// prediction says it will not fit. Nothing is lost: every job ends completed or reported with the
// reason it cannot run on this GPU.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/mig_device.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/peak_predictor.hpp"
#include "tessera/mig/policy/reconfig_planner.hpp"
#include "tessera/mig/policy/scheduler.hpp"
#include "tessera/mig/policy/scheme.hpp"

namespace tessera::mig {

struct JobOutcome;

// A job's predicted run time on an instance of `profile` once started (process start excluded),
// for time-fit. Simulated or not, tessera predicts it with the simulated GPU's kernel model
// (sim::SliceCostModel).
using JobTimeFn =
    std::function<core::Result<core::Nanos>(const workload::BatchJob&, const hw::MigProfile&)>;

// Two jobs' slowdowns side by side on an instance of `profile` (first: the first job's iteration
// time beside the second over alone; second: the second's), for time-fit's sharing.
using CoRunFn = std::function<core::Result<std::pair<double, double>>(
    const workload::BatchJob&, const workload::BatchJob&, const hw::MigProfile&)>;

// Why to stop the run now ("SIGTERM"), or nothing to go on. Asked after every event.
using StopFn = std::function<std::optional<std::string>()>;

struct ManagerOptions {
  Scheme scheme = Scheme::kB;
  bool early_restart = true;
  PredictorOptions predictor;
  Layout static_layout;  // Scheme::kStatic: created at the start, kept to the end
  // Scheme::kTimeFit: each job's time on each profile (null, or an error for a job: the
  // scheduler scales one profile's time to the others, or counts every job alike) and the
  // costs it weighs.
  JobTimeFn job_time;
  TimeFitOptions time_fit;
  // Scheme::kTimeFit on a device whose instances run two jobs (device::MigCapabilities): each
  // pair's slowdowns; null: no instance is shared.
  CoRunFn co_run;
  // Profiles the scheduler may hand out (empty: every profile without media extensions).
  std::vector<int> profile_ids;
  // Null: never. When it says stop, running jobs are stopped (device::MigDevice::stop_job), the
  // instances this run created destroyed, and the result says why, with every job not yet
  // resolved left unresolved.
  StopFn stop;
  // Told of each job as it is resolved (completed, or given up with its reason).
  std::function<void(const JobOutcome&)> on_resolved;
};

// One attempt of a job on one instance.
struct Attempt {
  int profile_id = 0;
  int start = 0;
  core::Nanos started = 0;
  core::Nanos ended = 0;
  device::JobExitKind exit = device::JobExitKind::kCompleted;
  bool early_restart = false;  // ended by the predictor, not by a failure
  std::int64_t iterations_done = 0;
  std::int64_t predicted_peak_bytes = 0;  // the prediction that ended it (early restart), or 0
  std::string beside;  // the job it started beside on a shared instance; empty: it started alone
};

struct JobOutcome {
  std::string name;
  bool completed = false;
  bool resolved = true;  // false: the run stopped first (MigRunResult::stopped)
  std::string reason;    // why it cannot run on this GPU, when !completed
  core::Nanos submitted = 0;
  core::Nanos finished = 0;  // completion (or when it was given up)
  std::int64_t estimated_peak_bytes = 0;
  std::int64_t actual_peak_bytes = 0;  // largest reserved bytes seen
  std::vector<Attempt> attempts;
  core::Nanos turnaround() const { return finished - submitted; }
};

// A reconfiguration the manager carried out, in order. One the device refused half way (idle
// instances destroyed, then the create refused) is recorded too, with the device's error: the
// GPU's layout changed even though no instance was created.
struct ReconfigEvent {
  core::Nanos at = 0;
  PlanKind kind = PlanKind::kPlace;
  std::vector<Placement> destroyed;
  Placement created;  // what was asked for; created only when `error` is empty
  std::string for_job;
  std::string error;
};

struct MigRunResult {
  std::string gpu;
  Scheme scheme = Scheme::kB;
  std::vector<JobOutcome> jobs;  // in submission order
  std::vector<ReconfigEvent> reconfigurations;
  core::Nanos makespan = 0;
  double energy_joules = 0;
  std::int64_t oom_restarts = 0;
  std::int64_t early_restarts = 0;
  std::int64_t shared_starts = 0;  // starts on an instance that ran another job
  // Why the run stopped before every job was resolved (ManagerOptions::stop); empty: it did not.
  std::string stopped;
  std::int64_t completed() const;
  double jobs_per_hour() const;
  // The longest any job waited from submission to its first start (or to being given up).
  core::Nanos longest_wait() const;
};

struct Progress {
  std::int64_t finished = 0;
  std::int64_t total = 0;
  core::Nanos now = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

// Runs every job to its end. Errors are the device's (a failed create, a rejected start) that
// the manager could not work around; job failures are outcomes, not errors.
core::Result<MigRunResult> run_jobs(device::MigDevice& device,
                                    const std::vector<workload::BatchJobPtr>& jobs,
                                    const ManagerOptions& options, const ProgressFn& progress = {});

}  // namespace tessera::mig
