#pragma once
// A scriptable device::MigDevice for testing the MIG manager without the simulator.
//
// Timing (trivial on purpose, so tests can work out times by hand): creating and destroying an
// instance is instantaneous; a job's iterations each take the job's iteration_time_full, or
// Options::iteration_time when that is 0, whatever the instance. Memory follows the job's
// trajectory: iteration i ends with a sample of its requested and reserved bytes, and the job
// runs out of memory at the first iteration whose reserved bytes exceed the instance.
//
// What it checks: every create against hw::check_mig_layout with the instances that exist, and
// destroys and starts against instances that do not exist or run a job; each such refusal is
// also written to violations(), which a correct manager keeps empty. Failures can be injected:
// the Nth create, destroy or start call fails (1-based, counted over the device's life), and a
// named job's first runs can exit kFailed.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/fakes/manual_executor.hpp"
#include "tessera/core/error.hpp"
#include "tessera/device/mig_device.hpp"
#include "tessera/hw/mig_profiles.hpp"

namespace tessera::test {

class FakeMigDevice final : public device::MigDevice {
 public:
  struct Options {
    core::Nanos iteration_time = core::kNanosPerMilli;
    bool memory_samples = true;
    std::uint64_t max_events = 10'000'000;  // run() gives up after this many (a runaway loop)
  };

  explicit FakeMigDevice(hw::MigGeometry geometry) : FakeMigDevice(std::move(geometry), {}) {}
  FakeMigDevice(hw::MigGeometry geometry, Options options)
      : geometry_(std::move(geometry)), options_(options) {}

  // --- scripting ---
  void fail_create_call(int n) { fail_create_.insert(n); }
  void fail_destroy_call(int n) { fail_destroy_.insert(n); }
  void fail_start_call(int n) { fail_start_.insert(n); }
  // The first `runs` runs of job `name` exit kFailed at their first iteration.
  void fail_job_runs(const std::string& name, int runs) { fail_runs_[name] = runs; }
  // An instance that exists before the manager starts (not counted as a create call).
  device::MigInstance add_existing(int profile_id, int start) { return insert(profile_id, start); }

  // --- what happened ---
  const std::vector<std::string>& violations() const { return violations_; }
  int create_calls() const { return create_calls_; }
  int destroy_calls() const { return destroy_calls_; }
  int start_calls() const { return start_calls_; }
  ManualExecutor& manual() { return executor_; }

  // --- device::MigDevice ---
  const hw::MigGeometry& geometry() const override { return geometry_; }
  device::MigCapabilities capabilities() const override {
    return {.reconfigure = true, .memory_samples = options_.memory_samples, .energy = false};
  }
  device::Executor& executor() override { return executor_; }

  std::vector<device::MigInstance> instances() const override {
    std::vector<device::MigInstance> out;
    for (const auto& [id, inst] : instances_) out.push_back(inst.info);
    std::ranges::sort(out, [](const auto& a, const auto& b) { return a.start < b.start; });
    return out;
  }

  core::Result<device::MigInstance> create_instance(int profile_id, int start) override {
    if (fail_create_.contains(++create_calls_)) {
      return core::failf(core::Domain::kDevice, core::Code::kInternal,
                         "injected failure of create call {}", create_calls_);
    }
    std::vector<hw::MigSlot> slots;
    for (const auto& [id, inst] : instances_) {
      slots.push_back({inst.info.profile_id, inst.info.start});
    }
    slots.push_back({profile_id, start});
    if (auto st = hw::check_mig_layout(geometry_, slots); !st) {
      return refuse(core::Code::kInvalidArgument,
                    fmt::format("create {}@{}: {}", profile_id, start, st.error().message()));
    }
    ++stats_.instances_created;
    return insert(profile_id, start);
  }

  core::Status destroy_instance(device::MigInstanceId id) override {
    if (fail_destroy_.contains(++destroy_calls_)) {
      return core::failf(core::Domain::kDevice, core::Code::kInternal,
                         "injected failure of destroy call {}", destroy_calls_);
    }
    auto it = instances_.find(id);
    if (it == instances_.end()) {
      return refuse(core::Code::kNotFound, fmt::format("destroy of unknown instance {}", id));
    }
    if (it->second.run) {
      return refuse(core::Code::kFailedPrecondition,
                    fmt::format("destroy of instance {} while a job runs on it", id));
    }
    instances_.erase(it);
    ++stats_.instances_destroyed;
    return {};
  }

  core::Result<device::JobRunId> start_job(device::MigInstanceId instance,
                                           workload::BatchJobPtr job,
                                           device::MigJobObserver& observer) override {
    if (fail_start_.contains(++start_calls_)) {
      return core::failf(core::Domain::kDevice, core::Code::kInternal,
                         "injected failure of start call {}", start_calls_);
    }
    auto it = instances_.find(instance);
    if (it == instances_.end()) {
      return refuse(core::Code::kNotFound, fmt::format("start on unknown instance {}", instance));
    }
    if (it->second.run) {
      return refuse(core::Code::kFailedPrecondition,
                    fmt::format("start on instance {}, which runs a job", instance));
    }
    const device::JobRunId id = next_run_++;
    Run run{.job = std::move(job), .instance = instance, .observer = &observer};
    if (auto f = fail_runs_.find(run.job->name); f != fail_runs_.end() && f->second > 0) {
      --f->second;
      run.fail = true;
    }
    it->second.run = id;
    runs_.emplace(id, std::move(run));
    schedule_iteration(id);
    return id;
  }

  core::Status stop_job(device::JobRunId id) override {
    auto it = runs_.find(id);
    if (it == runs_.end()) return {};
    executor_.cancel(it->second.timer);
    Run& run = it->second;
    finish(id, device::JobExitKind::kKilled, run.iteration, "stopped");
    return {};
  }

  core::Status run(const std::function<bool()>& done) override {
    std::uint64_t events = 0;
    while (!done()) {
      if (events++ >= options_.max_events) {
        return core::failf(core::Domain::kDevice, core::Code::kInternal,
                           "fake MIG device: more than {} events", options_.max_events);
      }
      if (!executor_.step()) break;
    }
    return {};
  }

  device::MigDeviceStats stats() const override {
    device::MigDeviceStats s = stats_;
    s.elapsed = executor_.now();
    return s;
  }

 private:
  struct Instance {
    device::MigInstance info;
    std::optional<device::JobRunId> run;
  };
  struct Run {
    workload::BatchJobPtr job;
    device::MigInstanceId instance = 0;
    device::MigJobObserver* observer = nullptr;
    std::int64_t iteration = 0;  // the next one to run
    std::int64_t peak = 0;
    bool fail = false;
    device::TimerId timer = 0;
  };

  device::MigInstance insert(int profile_id, int start) {
    const hw::MigProfile* p = geometry_.find(profile_id);
    device::MigInstance inst{.id = next_instance_++,
                             .profile_id = profile_id,
                             .start = start,
                             .uuid = fmt::format("MIG-fake-{}", next_instance_ - 1),
                             .memory_bytes = p ? p->memory_bytes : 0,
                             .sms = p ? p->sms : 0};
    instances_[inst.id] = Instance{inst, std::nullopt};
    return inst;
  }

  std::unexpected<core::Error> refuse(core::Code code, std::string message) {
    violations_.push_back(message);
    return core::fail(core::Domain::kDevice, code, std::move(message));
  }

  core::Nanos iteration_time(const workload::BatchJob& job) const {
    return job.iteration_time_full > 0 ? job.iteration_time_full : options_.iteration_time;
  }

  void schedule_iteration(device::JobRunId id) {
    Run& run = runs_.at(id);
    run.timer =
        executor_.schedule_after(iteration_time(*run.job), [this, id] { end_iteration(id); });
  }

  void end_iteration(device::JobRunId id) {
    Run& run = runs_.at(id);
    const workload::BatchJob& job = *run.job;
    const std::int64_t i = run.iteration;
    if (run.fail) {
      finish(id, device::JobExitKind::kFailed, i, "injected job failure");
      return;
    }
    const std::int64_t reserved = job.memory.reserved_at(i, job.iterations);
    run.peak = std::max(run.peak, reserved);
    if (reserved > instances_.at(run.instance).info.memory_bytes) {
      finish(id, device::JobExitKind::kOutOfMemory, i, "out of memory");
      return;
    }
    run.iteration = i + 1;
    device::MigJobObserver* observer = run.observer;
    if (options_.memory_samples) {
      observer->on_sample({.run = id,
                           .iteration = i,
                           .requested_bytes = job.memory.requested_at(i, job.iterations),
                           .reserved_bytes = reserved,
                           .at = executor_.now()});
    }
    // The observer may have stopped the run (and `run` with it).
    auto it = runs_.find(id);
    if (it == runs_.end()) return;
    if (it->second.iteration >= job.iterations) {
      finish(id, device::JobExitKind::kCompleted, job.iterations, "");
    } else {
      schedule_iteration(id);
    }
  }

  // Ends the run now and reports the exit from the executor's loop.
  void finish(device::JobRunId id, device::JobExitKind kind, std::int64_t done,
              std::string message) {
    auto node = runs_.extract(id);
    Run& run = node.mapped();
    if (auto inst = instances_.find(run.instance); inst != instances_.end())
      inst->second.run.reset();
    device::JobExit exit{.run = id,
                         .kind = kind,
                         .iterations_done = done,
                         .peak_reserved_bytes = run.peak,
                         .at = executor_.now(),
                         .message = std::move(message)};
    device::MigJobObserver* observer = run.observer;
    executor_.schedule_at(executor_.now(), [observer, exit] { observer->on_exit(exit); });
  }

  hw::MigGeometry geometry_;
  Options options_;
  ManualExecutor executor_;
  std::map<device::MigInstanceId, Instance> instances_;
  std::map<device::JobRunId, Run> runs_;
  device::MigInstanceId next_instance_ = 1;
  device::JobRunId next_run_ = 1;
  int create_calls_ = 0;
  int destroy_calls_ = 0;
  int start_calls_ = 0;
  std::set<int> fail_create_, fail_destroy_, fail_start_;
  std::map<std::string, int> fail_runs_;
  std::vector<std::string> violations_;
  device::MigDeviceStats stats_;
};

}  // namespace tessera::test
