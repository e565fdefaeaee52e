// NvmlMigDevice's job processes: each job's command spawned in a process group of its own with
// the instance's MIG device visible, its memory sampled, stopped by signals, reaped, and its exit
// status turned into how the job ended.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "tessera/backends/nvml/internal/nvml_mig_records.hpp"
#include "tessera/backends/nvml/nvml_mig_device.hpp"
#include "tessera/core/process_table.hpp"
#include "tessera/core/try.hpp"
#include "tessera/device/poll_loop.hpp"

extern char** environ;

namespace tessera::cuda {

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

std::string describe_wait_status(std::optional<int> wait_status) {
  if (!wait_status) return "exit status unknown (the process was reaped elsewhere)";
  const int status = *wait_status;
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = strsignal(WTERMSIG(status));
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), name ? name : "?");
  }
  return fmt::format("wait status {}", status);
}

}  // namespace

NvmlMigDevice::~NvmlMigDevice() {
  for (auto& [id, run] : runs_) {
    kill(-run->pid, SIGKILL);
    int status = 0;
    waitpid(run->pid, &status, 0);
  }
}

core::Result<device::JobRunId> NvmlMigDevice::start_job(device::MigInstanceId instance,
                                                        workload::BatchJobPtr job,
                                                        device::MigJobObserver& observer) {
  if (job == nullptr) {
    return core::fail(core::Domain::kMig, core::Code::kInvalidArgument, "start_job: no job");
  }
  if (job->command.empty()) {
    return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                       "job '{}' has no command: on a real GPU every job runs as a process",
                       job->name);
  }
  for (const auto& [run_id, run] : runs_) {
    if (run->instance == instance) {
      return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                         "cannot start job '{}' on instance {}: job '{}' (run {}) is running there",
                         job->name, instance, run->job->name, run_id);
    }
  }
  const std::string what = fmt::format("cannot start job '{}' on instance {}", job->name, instance);
  TESSERA_ASSIGN_OR_RETURN(const Instance inst, core::with_context(find_instance(instance), what));
  if (inst.mig == nullptr || inst.info.uuid.empty()) {
    return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                       "{}: it has no compute instance to run on", what);
  }

  std::vector<char*> argv;
  for (const std::string& a : job->command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  constexpr std::string_view kVisible = "CUDA_VISIBLE_DEVICES=";
  const std::string visible = fmt::format("{}{}", kVisible, inst.info.uuid);
  std::vector<char*> envp;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with(kVisible)) envp.push_back(*e);
  }
  envp.push_back(const_cast<char*>(visible.c_str()));
  envp.push_back(nullptr);

  // A process group of its own, so stop_job reaches the processes the command starts too; no
  // blocked signals and default SIGTERM/SIGINT/SIGPIPE whatever this process does with them.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition, "{}: {}: {}", what,
                       job->command.front(), std::strerror(rc));
  }

  auto run = std::make_unique<Run>();
  run->id = next_run_++;
  run->instance = instance;
  run->job = std::move(job);
  run->observer = &observer;
  run->pid = pid;
  // Read at once: the child exists until this process reaps it, so the number is still its own.
  if (const auto info = core::read_process(pid)) run->start_ticks = info->start_ticks;
  run->mig = inst.mig;
  run->instance_bytes = inst.info.memory_bytes;
  const device::JobRunId id = run->id;
  // The first sample at once (from the loop), so even a job that fails at its start is measured.
  run->sample_timer = executor_.schedule_after(0, [this, id] { sample(id); });
  runs_.emplace(id, std::move(run));
  return id;
}

void NvmlMigDevice::sample(device::JobRunId id) {
  const auto it = runs_.find(id);
  if (it == runs_.end()) return;
  Run& run = *it->second;
  run.sample_timer = 0;
  nvml::Memory memory{};
  const nvml::Return r = api().device_get_memory_info(run.mig, &memory);
  if (r != nvml::kSuccess) {
    run.sample_error = check(r, "nvmlDeviceGetMemoryInfo").error().message();
    return;  // no further samples; the exit message says why
  }
  ++run.samples;
  const auto used = static_cast<std::int64_t>(memory.used);
  run.peak_used = std::max(run.peak_used, used);
  run.total_seen = static_cast<std::int64_t>(memory.total);
  run.sample_timer = executor_.schedule_after(options_.sample_period, [this, id] { sample(id); });
  run.observer->on_sample({.run = id,
                           .iteration = run.samples,
                           .requested_bytes = used,
                           .reserved_bytes = used,
                           .at = executor_.now()});
}

core::Status NvmlMigDevice::stop_job(device::JobRunId id) {
  const auto it = runs_.find(id);
  if (it == runs_.end()) {
    if (id > 0 && id < next_run_) return {};  // already finished
    return core::failf(core::Domain::kMig, core::Code::kNotFound, "stop_job: no run {}", id);
  }
  Run& run = *it->second;
  if (run.stopping) return {};
  run.stopping = true;
  kill(-run.pid, SIGTERM);
  run.kill_timer = executor_.schedule_after(options_.kill_grace, [this, id] {
    if (const auto r = runs_.find(id); r != runs_.end()) kill(-r->second->pid, SIGKILL);
  });
  return {};
}

std::optional<device::JobProcess> NvmlMigDevice::job_process(device::JobRunId id) const {
  const auto it = runs_.find(id);
  if (it == runs_.end()) return std::nullopt;
  return device::JobProcess{.process_group = it->second->pid,
                            .start_ticks = it->second->start_ticks};
}

void NvmlMigDevice::finish(Run& run, std::optional<int> wait_status) {
  if (run.sample_timer != 0) executor_.cancel(run.sample_timer);
  if (run.kill_timer != 0) executor_.cancel(run.kill_timer);
  device::JobExit exit{.run = run.id,
                       .kind = device::JobExitKind::kCompleted,
                       .iterations_done = run.samples,
                       .peak_reserved_bytes = run.peak_used,
                       .at = executor_.now(),
                       .message = {}};
  const bool success = wait_status && WIFEXITED(*wait_status) && WEXITSTATUS(*wait_status) == 0;
  const std::int64_t limit = run.total_seen > 0 ? run.total_seen : run.instance_bytes;
  if (success) {
    exit.kind = device::JobExitKind::kCompleted;  // even if a stop came too late to matter
  } else if (run.stopping) {
    exit.kind = device::JobExitKind::kKilled;
    exit.message = fmt::format("stopped ({})", describe_wait_status(wait_status));
  } else if (limit > 0 && static_cast<double>(run.peak_used) >=
                              options_.oom_fraction * static_cast<double>(limit)) {
    exit.kind = device::JobExitKind::kOutOfMemory;
    exit.message =
        fmt::format("{} with {} MiB of the instance's {} MiB in use",
                    describe_wait_status(wait_status), run.peak_used / kMiB, limit / kMiB);
  } else {
    exit.kind = device::JobExitKind::kFailed;
    exit.message = describe_wait_status(wait_status);
  }
  if (!run.sample_error.empty()) {
    exit.message += fmt::format("{}memory samples stopped: {}", exit.message.empty() ? "" : "; ",
                                run.sample_error);
  }
  device::MigJobObserver* observer = run.observer;
  runs_.erase(run.id);  // `run` is gone from here on
  observer->on_exit(exit);
}

void NvmlMigDevice::reap() {
  std::vector<std::pair<device::JobRunId, std::optional<int>>> exited;
  for (const auto& [id, run] : runs_) {
    // Seen without reaping first: while the exited leader is a zombie its process group ID
    // cannot be reused, so whatever the command left in its group is killed safely.
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(run->pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      // ECHILD: something else reaped it (SIGCHLD ignored, or another waitpid); its status is
      // lost, but it has ended.
      if (errno == ECHILD) exited.emplace_back(id, std::nullopt);
      continue;
    }
    if (info.si_pid != run->pid) continue;  // still running
    kill(-run->pid, SIGKILL);
    int status = 0;
    if (waitpid(run->pid, &status, 0) == run->pid) {
      exited.emplace_back(id, status);
    } else {
      exited.emplace_back(id, std::nullopt);
    }
  }
  for (const auto& [id, status] : exited) {
    if (const auto it = runs_.find(id); it != runs_.end()) finish(*it->second, status);
  }
}

core::Status NvmlMigDevice::run(const std::function<bool()>& done) {
  return device::poll_until(
      executor_, core::kNever, options_.poll_period,
      [this]() -> core::Status {
        reap();
        return {};
      },
      [this, &done] { return (done && done()) || (runs_.empty() && !executor_.has_pending()); });
}

}  // namespace tessera::cuda
