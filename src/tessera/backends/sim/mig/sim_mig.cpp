#include "tessera/backends/sim/mig/sim_mig.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"

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
    JobRunId run = 0;  // 0: idle
  };

  struct Run {
    workload::BatchJobPtr job;
    MigInstanceId instance = 0;
    device::MigJobObserver* observer = nullptr;
    int profile_id = 0;
    std::int64_t memory_bytes = 0;
    std::int64_t next = 0;  // the iteration running, or the next to run
    bool in_iteration = false;
    core::Nanos iteration_start = 0;
    IterationCost cost;
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
        costs(std::move(s), geometry) {}

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
  return device::MigCapabilities{.reconfigure = true, .memory_samples = true, .energy = true};
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
  State::Instance inst{.info = MigInstance{.id = id,
                                           .profile_id = profile_id,
                                           .start = start,
                                           .uuid = fmt::format("MIG-sim-{}-{}", s.spec.name, id),
                                           .memory_bytes = p->memory_bytes,
                                           .sms = p->sms},
                       .profile = *p};
  inst.ready_at = std::max(s.engine.now(), s.reconfig_free_at) + s.options.create_time;
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
  if (it->second.run != 0) {
    return core::failf(Domain::kMig, Code::kFailedPrecondition,
                       "MIG instance {} ({} at slice {}) runs job run {}; stop it first", id,
                       it->second.profile.name, it->second.info.start, it->second.run);
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
  if (it->second.run != 0) {
    return core::failf(Domain::kMig, Code::kFailedPrecondition,
                       "MIG instance {} already runs job run {}", instance, it->second.run);
  }
  if (!job) {
    return core::fail(Domain::kMig, Code::kInvalidArgument, "start_job needs a job");
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
  it->second.run = id;
  State::Run run{.job = std::move(job),
                 .instance = instance,
                 .observer = &observer,
                 .profile_id = it->second.info.profile_id,
                 .memory_bytes = it->second.info.memory_bytes,
                 .next = 0,
                 .in_iteration = false,
                 .iteration_start = 0,
                 .cost = {},
                 .timer = 0,
                 .peak_reserved = 0,
                 .noise = s.random.stream(fmt::format("sim-mig/samples/{}", id))};
  const core::Nanos begin =
      std::max(s.engine.now(), it->second.ready_at) + s.options.job_start_time;
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
    s.active_joules += r.cost.active_watts * core::to_seconds(s.engine.now() - r.iteration_start);
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
  if (auto inst = instances.find(r.instance); inst != instances.end()) inst->second.run = 0;
  runs.erase(it);
  return exit;
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
  if (reserved > r.memory_bytes) {
    const JobExit exit =
        finish(id, JobExitKind::kOutOfMemory,
               fmt::format("iteration {} needs {} reserved bytes; the instance has {}", i, reserved,
                           r.memory_bytes));
    observer->on_exit(exit);
    return;
  }
  const hw::MigProfile& profile = instances.at(r.instance).profile;
  auto c = costs.iteration(job, i, profile);
  if (!c) {
    const JobExit exit = finish(id, JobExitKind::kFailed, c.error().message());
    observer->on_exit(exit);
    return;
  }
  r.cost = *c;
  r.in_iteration = true;
  r.iteration_start = engine.now();
  r.timer = engine.schedule_at(engine.now() + c->time, [this, id] { end_iteration(id); });
}

void SimMig::State::end_iteration(JobRunId id) {
  auto it = runs.find(id);
  if (it == runs.end()) return;
  Run& r = it->second;
  r.timer = 0;
  r.in_iteration = false;
  active_joules += r.cost.active_watts * core::to_seconds(r.cost.time);
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
