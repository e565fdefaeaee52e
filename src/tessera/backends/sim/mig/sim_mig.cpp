#include "tessera/backends/sim/mig/sim_mig.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::sim {

using core::Code;
using core::Domain;
using device::JobExit;
using device::JobExitKind;
using device::JobRunId;
using device::MigInstance;
using device::MigInstanceId;

struct SimMig::State {
  struct Instance {
    MigInstance info;
    hw::MigProfile profile;
    core::Nanos ready_at = 0;
    std::vector<JobRunId> runs;  // at most options.jobs_per_instance
  };

  struct Run {
    workload::BatchJobPtr job;
    MigInstanceId instance = 0;
    device::MigJobObserver* observer = nullptr;
    int profile_id = 0;
    std::int64_t memory_bytes = 0;
    std::int64_t next = 0;  // the iteration running, or the next to run
    bool begun = false;     // has begun its first iteration (its process has started)
    bool in_iteration = false;
    std::int64_t held_bytes = 0;  // reserved by its current (or last) iteration
    IterationCost alone;          // the current iteration alone on the instance
    // The current iteration at its current rate: the fraction done before `since`, its whole
    // duration at this rate, and its power.
    double done = 0;
    core::Nanos since = 0;
    core::Nanos duration = 0;
    double watts = 0;
    device::TimerId timer = 0;  // the pending begin or end event
    std::int64_t peak_reserved = 0;
    core::RandomStream noise;
  };

  State(Engine& e, hw::GpuSpec s, SimMigOptions o, hw::MigGeometry g)
      : engine(e),
        spec(s),
        options(o),
        geometry(std::move(g)),
        random(o.seed),
        costs(std::move(s), geometry, o.share_mode) {}

  Engine& engine;
  hw::GpuSpec spec;
  SimMigOptions options;
  hw::MigGeometry geometry;
  core::RandomStreams random;

  std::map<MigInstanceId, Instance> instances;
  MigInstanceId next_instance = 1;
  // Reconfigurations are serialised, as the driver applies them one at a time (ASSUMPTION): a
  // create or destroy starts when the previous one has finished.
  core::Nanos reconfig_free_at = 0;

  std::map<JobRunId, Run> runs;  // running (or waiting to begin) only
  JobRunId next_run = 1;

  SliceCostModel costs;
  double active_joules = 0;
  device::MigDeviceStats stats;

  void begin_iteration(JobRunId id);
  void end_iteration(JobRunId id);
  // The run that shares `r`'s instance and has begun its iterations; 0 when none does.
  JobRunId partner(JobRunId id, const Run& r) const;
  // Counts the current iteration's energy up to now and runs its rest for `duration` at `watts`.
  void retime(JobRunId id, Run& r, core::Nanos duration, double watts);
  // Frees the run's instance and forgets the run; the caller reports the exit.
  JobExit finish(JobRunId id, JobExitKind kind, std::string message);
  device::JobSample sample(JobRunId id, Run& r, std::int64_t iteration);
};

SimMig::SimMig(Engine& engine, hw::GpuSpec spec, SimMigOptions options, hw::MigGeometry geometry)
    : state_(std::make_unique<State>(engine, std::move(spec), options, std::move(geometry))) {}

SimMig::~SimMig() {
  // Pending events point at this device; a run left going must not fire after it is gone.
  for (auto& [id, r] : state_->runs) {
    if (r.timer != 0) state_->engine.cancel(r.timer);
  }
}

core::Result<std::unique_ptr<SimMig>> SimMig::create(Engine& engine, hw::GpuSpec spec,
                                                     SimMigOptions options) {
  TESSERA_TRY(validate_model(spec, SimGpuOptions{}));
  if (options.create_time < 0 || options.destroy_time < 0 || options.job_start_time < 0) {
    return core::failf(Domain::kSim, Code::kInvalidArgument,
                       "simulated MIG times must be >= 0 (create {} ns, destroy {} ns, job start "
                       "{} ns)",
                       options.create_time, options.destroy_time, options.job_start_time);
  }
  if (options.jobs_per_instance < 1 || options.jobs_per_instance > 2) {
    return core::failf(Domain::kSim, Code::kInvalidArgument,
                       "jobs_per_instance is {}; an instance runs 1 or 2 jobs at once",
                       options.jobs_per_instance);
  }
  if (options.jobs_per_instance > 1 && !gpu::is_sharing_mode(options.share_mode)) {
    return core::failf(Domain::kSim, Code::kInvalidArgument,
                       "unknown sharing mode '{}' for jobs sharing an instance; known modes: {}",
                       options.share_mode, gpu::sharing_mode_names());
  }
  if (!(options.sample_noise >= 0) || !std::isfinite(options.sample_noise)) {
    return core::failf(Domain::kSim, Code::kInvalidArgument,
                       "sample_noise is {}; use a relative noise >= 0 (0.01 is 1%)",
                       options.sample_noise);
  }
  hw::MigGeometry geometry = whole_gpu_geometry(spec);
  if (!options.whole_gpu) {
    TESSERA_ASSIGN_OR_RETURN(geometry, hw::find_mig_geometry(spec.name));
  }
  return std::unique_ptr<SimMig>(new SimMig(engine, std::move(spec), options, std::move(geometry)));
}

const hw::MigGeometry& SimMig::geometry() const {
  return state_->geometry;
}

device::MigCapabilities SimMig::capabilities() const {
  return device::MigCapabilities{.reconfigure = true,
                                 .memory_samples = true,
                                 .energy = true,
                                 .jobs_per_instance = state_->options.jobs_per_instance};
}

device::Executor& SimMig::executor() {
  return state_->engine;
}

std::vector<MigInstance> SimMig::instances() const {
  std::vector<MigInstance> out;
  for (const auto& [id, inst] : state_->instances) out.push_back(inst.info);
  std::ranges::sort(out, {}, &MigInstance::start);
  return out;
}

core::Result<MigInstance> SimMig::create_instance(int profile_id, int start) {
  State& s = *state_;
  const hw::MigProfile* p = s.geometry.find(profile_id);
  if (p == nullptr) {
    std::string known;
    for (const auto& q : s.geometry.profiles) {
      known += fmt::format("{}{} (ID {})", known.empty() ? "" : ", ", q.name, q.id);
    }
    return core::failf(Domain::kMig, Code::kNotFound, "{} has no MIG profile ID {}; profiles: {}",
                       s.geometry.gpu, profile_id, known);
  }
  const int end = start + p->memory_slices;
  std::vector<hw::MigSlot> slots;
  for (const auto& [id, inst] : s.instances) {
    const int other_end = inst.info.start + inst.profile.memory_slices;
    if (start < other_end && inst.info.start < end) {
      return core::failf(Domain::kMig, Code::kFailedPrecondition,
                         "cannot create {} at memory slice {}: its slices {}-{} overlap instance "
                         "{} ({} at slice {}, slices {}-{})",
                         p->name, start, start, end - 1, id, inst.profile.name, inst.info.start,
                         inst.info.start, other_end - 1);
    }
    slots.push_back({.profile_id = inst.info.profile_id, .start = inst.info.start});
  }
  slots.push_back({.profile_id = profile_id, .start = start});
  if (auto ok = hw::check_mig_layout(s.geometry, slots); !ok) {
    return std::unexpected(ok.error().with_context(
        fmt::format("cannot create {} at memory slice {}", p->name, start)));
  }
  const MigInstanceId id = s.next_instance++;
  State::Instance inst{
      .info = MigInstance{.id = id,
                          .profile_id = profile_id,
                          .start = start,
                          .uuid = fmt::format("MIG-sim-{}-{}", s.spec.name, id),
                          .memory_bytes = p->memory_bytes,
                          .sms = p->sms},
      .profile = *p,
      .ready_at = std::max(s.engine.now(), s.reconfig_free_at) + s.options.create_time,
      .runs = {}};
  s.reconfig_free_at = inst.ready_at;
  ++s.stats.instances_created;
  return s.instances.emplace(id, std::move(inst)).first->second.info;
}

core::Status SimMig::destroy_instance(MigInstanceId id) {
  State& s = *state_;
  auto it = s.instances.find(id);
  if (it == s.instances.end()) {
    return core::failf(Domain::kMig, Code::kNotFound, "no MIG instance {} on {}", id,
                       s.geometry.gpu);
  }
  if (!it->second.runs.empty()) {
    return core::failf(Domain::kMig, Code::kFailedPrecondition,
                       "MIG instance {} ({} at slice {}) runs job run {}; stop it first", id,
                       it->second.profile.name, it->second.info.start, it->second.runs.front());
  }
  s.instances.erase(it);
  s.reconfig_free_at = std::max(s.engine.now(), s.reconfig_free_at) + s.options.destroy_time;
  ++s.stats.instances_destroyed;
  return {};
}

core::Result<JobRunId> SimMig::start_job(MigInstanceId instance, workload::BatchJobPtr job,
                                         device::MigJobObserver& observer) {
  State& s = *state_;
  auto it = s.instances.find(instance);
  if (it == s.instances.end()) {
    return core::failf(Domain::kMig, Code::kNotFound, "no MIG instance {} on {}", instance,
                       s.geometry.gpu);
  }
  State::Instance& inst = it->second;
  if (std::ssize(inst.runs) >= s.options.jobs_per_instance) {
    return core::failf(Domain::kMig, Code::kFailedPrecondition,
                       "MIG instance {} already runs {} (at most {} at once)", instance,
                       inst.runs.size() == 1 ? fmt::format("job run {}", inst.runs.front())
                                             : fmt::format("{} job runs", inst.runs.size()),
                       s.options.jobs_per_instance);
  }
  if (!job) {
    return core::fail(Domain::kMig, Code::kInvalidArgument, "start_job needs a job");
  }
  for (const JobRunId other : inst.runs) {
    const workload::BatchJob& o = *s.runs.at(other).job;
    if (!job->work.build || !o.work.build) {
      return core::failf(Domain::kMig, Code::kFailedPrecondition,
                         "job '{}' cannot share MIG instance {} with job '{}': a job without "
                         "kernels cannot be timed beside another",
                         job->name, instance, o.name);
    }
  }
  if (job->iterations < 1) {
    return core::failf(Domain::kMig, Code::kInvalidArgument,
                       "job '{}' has {} iterations; it needs at least 1", job->name,
                       job->iterations);
  }
  if (!job->work.build && job->iteration_time_full <= 0) {
    return core::failf(Domain::kMig, Code::kInvalidArgument,
                       "job '{}' has neither kernels nor a time per iteration to simulate",
                       job->name);
  }
  const JobRunId id = s.next_run++;
  inst.runs.push_back(id);
  State::Run run{.job = std::move(job),
                 .instance = instance,
                 .observer = &observer,
                 .profile_id = inst.info.profile_id,
                 .memory_bytes = inst.info.memory_bytes,
                 .next = 0,
                 .begun = false,
                 .in_iteration = false,
                 .held_bytes = 0,
                 .alone = {},
                 .done = 0,
                 .since = 0,
                 .duration = 0,
                 .watts = 0,
                 .timer = 0,
                 .peak_reserved = 0,
                 .noise = s.random.stream(fmt::format("sim-mig/samples/{}", id))};
  const core::Nanos begin = std::max(s.engine.now(), inst.ready_at) + s.options.job_start_time;
  run.timer = s.engine.schedule_at(begin, [&s, id] { s.begin_iteration(id); });
  s.runs.emplace(id, std::move(run));
  return id;
}

core::Status SimMig::stop_job(JobRunId id) {
  State& s = *state_;
  auto it = s.runs.find(id);
  if (it == s.runs.end()) {
    if (id != 0 && id < s.next_run) return {};  // already finished
    return core::failf(Domain::kMig, Code::kNotFound, "no job run {}", id);
  }
  State::Run& r = it->second;
  if (r.timer != 0) s.engine.cancel(r.timer);
  if (r.in_iteration) {
    // The killed iteration's active energy, pro rata for the part it ran.
    s.active_joules += r.watts * core::to_seconds(s.engine.now() - r.since);
  }
  device::MigJobObserver* observer = r.observer;
  JobExit exit = s.finish(id, JobExitKind::kKilled, "stopped");
  s.engine.schedule_at(s.engine.now(), [observer, exit] { observer->on_exit(exit); });
  return {};
}

core::Status SimMig::run(const std::function<bool()>& done) {
  State& s = *state_;
  if (!(done && done())) {
    while (s.engine.step()) {
      if (done && done()) break;
    }
  }
  s.stats.elapsed = s.engine.now();
  return {};
}

device::MigDeviceStats SimMig::stats() const {
  device::MigDeviceStats out = state_->stats;
  out.energy_joules =
      state_->spec.idle_watts * core::to_seconds(out.elapsed) + state_->active_joules;
  return out;
}

device::JobSample SimMig::State::sample(JobRunId id, Run& r, std::int64_t iteration) {
  const workload::BatchJob& job = *r.job;
  const double z = options.sample_noise > 0 ? r.noise.normal(0, 1) : 0;
  const workload::MemoryReading m =
      workload::noisy_reading(job.memory, iteration, job.iterations, options.sample_noise, z);
  return device::JobSample{.run = id,
                           .iteration = iteration,
                           .requested_bytes = m.requested,
                           .reserved_bytes = m.reserved,
                           .at = engine.now()};
}

JobExit SimMig::State::finish(JobRunId id, JobExitKind kind, std::string message) {
  auto it = runs.find(id);
  Run& r = it->second;
  JobExit exit{.run = id,
               .kind = kind,
               .iterations_done = r.next,
               .peak_reserved_bytes = r.peak_reserved,
               .at = engine.now(),
               .message = std::move(message)};
  // A run that never began its iterations slowed nobody.
  const JobRunId other = r.begun ? partner(id, r) : 0;
  if (auto inst = instances.find(r.instance); inst != instances.end()) {
    std::erase(inst->second.runs, id);
  }
  runs.erase(it);
  // The one left runs the rest of its iteration alone.
  if (other != 0) {
    Run& o = runs.at(other);
    retime(other, o, o.alone.time, o.alone.active_watts);
  }
  return exit;
}

JobRunId SimMig::State::partner(JobRunId id, const Run& r) const {
  auto inst = instances.find(r.instance);
  if (inst == instances.end()) return 0;
  for (const JobRunId other : inst->second.runs) {
    if (other != id && runs.at(other).begun) return other;
  }
  return 0;
}

void SimMig::State::retime(JobRunId id, Run& r, core::Nanos duration, double watts) {
  if (!r.in_iteration) return;
  const core::Nanos now = engine.now();
  if (r.duration > 0)
    r.done += static_cast<double>(now - r.since) / static_cast<double>(r.duration);
  r.done = std::min(r.done, 1.0);
  active_joules += r.watts * core::to_seconds(now - r.since);
  r.since = now;
  r.duration = duration;
  r.watts = watts;
  engine.cancel(r.timer);
  const core::Nanos left = core::round_to_nanos((1 - r.done) * static_cast<double>(duration));
  r.timer = engine.schedule_at(now + left, [this, id] { end_iteration(id); });
}

void SimMig::State::begin_iteration(JobRunId id) {
  auto it = runs.find(id);
  if (it == runs.end()) return;
  Run& r = it->second;
  r.timer = 0;
  const workload::BatchJob& job = *r.job;
  const std::int64_t i = r.next;
  const std::int64_t reserved = job.memory.reserved_at(i, job.iterations);
  device::MigJobObserver* observer = r.observer;
  const JobRunId other = partner(id, r);
  const std::int64_t others = other != 0 ? runs.at(other).held_bytes : 0;
  if (reserved + others > r.memory_bytes) {
    const JobExit exit = finish(
        id, JobExitKind::kOutOfMemory,
        other != 0 ? fmt::format("iteration {} needs {} reserved bytes beside the {} of job '{}'; "
                                 "the instance has {}",
                                 i, reserved, others, runs.at(other).job->name, r.memory_bytes)
                   : fmt::format("iteration {} needs {} reserved bytes; the instance has {}", i,
                                 reserved, r.memory_bytes));
    observer->on_exit(exit);
    return;
  }
  const hw::MigProfile& profile = instances.at(r.instance).profile;
  auto c = costs.iteration(job, i, profile);
  core::Result<CoRunCost> co = CoRunCost{};
  if (c && other != 0) co = costs.co_run(job, i, *runs.at(other).job, runs.at(other).next, profile);
  if (!c || !co) {
    const JobExit exit =
        finish(id, JobExitKind::kFailed, c ? co.error().message() : c.error().message());
    observer->on_exit(exit);
    return;
  }
  r.begun = true;
  r.held_bytes = reserved;
  r.alone = *c;
  r.in_iteration = true;
  r.done = 0;
  r.since = engine.now();
  r.duration = c->time;
  r.watts = c->active_watts;
  if (other != 0) {
    r.duration = core::round_to_nanos(static_cast<double>(c->time) * co->slowdown_a);
    r.watts = co->active_watts / 2;
    Run& o = runs.at(other);
    retime(other, o, core::round_to_nanos(static_cast<double>(o.alone.time) * co->slowdown_b),
           co->active_watts / 2);
  }
  r.timer = engine.schedule_at(engine.now() + r.duration, [this, id] { end_iteration(id); });
}

void SimMig::State::end_iteration(JobRunId id) {
  auto it = runs.find(id);
  if (it == runs.end()) return;
  Run& r = it->second;
  r.timer = 0;
  r.in_iteration = false;
  active_joules += r.watts * core::to_seconds(engine.now() - r.since);
  const workload::BatchJob& job = *r.job;
  const std::int64_t i = r.next;
  r.peak_reserved = std::max(r.peak_reserved, job.memory.reserved_at(i, job.iterations));
  r.next = i + 1;
  const device::JobSample s = sample(id, r, i);
  device::MigJobObserver* observer = r.observer;
  if (r.next == job.iterations) {
    const JobExit exit = finish(id, JobExitKind::kCompleted, "");
    observer->on_sample(s);
    observer->on_exit(exit);
    return;
  }
  observer->on_sample(s);
  // The observer may have stopped the run (an early restart) while handling the sample.
  if (runs.contains(id)) begin_iteration(id);
}

}  // namespace tessera::sim
