#include "tessera/mig/runtime/manager.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/mig/policy/restart_policy.hpp"
#include "tessera/mig/policy/scheduler.hpp"

namespace tessera::mig {

std::int64_t MigRunResult::completed() const {
  return std::ranges::count_if(jobs, [](const JobOutcome& j) { return j.completed; });
}

double MigRunResult::jobs_per_hour() const {
  if (makespan <= 0) return 0;
  return static_cast<double>(completed()) / (core::to_seconds(makespan) / 3600.0);
}

core::Nanos MigRunResult::longest_wait() const {
  core::Nanos out = 0;
  for (const JobOutcome& j : jobs) {
    if (!j.resolved && j.attempts.empty()) continue;
    const core::Nanos first = j.attempts.empty() ? j.finished : j.attempts.front().started;
    out = std::max(out, first - j.submitted);
  }
  return out;
}

namespace {

// A job's plan that fails this many times in a row while nothing runs is given up with the
// device's message (ASSUMPTION: three tries tell a persistent refusal from a transient one).
constexpr int kMaxPlanFailures = 3;

enum class Phase { kWaiting, kQueued, kRunning, kResolved };

struct InstanceInfo {
  device::MigInstance instance;
  bool ours = false;              // created by this run: destroyed at its end
  std::vector<std::size_t> jobs;  // the jobs running on it
  // For time-fit: when it is predicted to take a job (ready once created, free once its jobs
  // end).
  core::Nanos free_at = 0;
};

struct JobState {
  workload::BatchJobPtr job;
  Phase phase = Phase::kWaiting;
  std::int64_t need = 0;
  std::optional<int> min_profile;
  std::vector<ProfileTime> times;  // time-fit's predictions, made when the job is released
  std::size_t work_class = 0;      // jobs of one class run the same work (QueuedJob::work_class)
  // Time-fit's prediction of the current attempt: when its work begins, how much it has left
  // alone from then, and its slowdown beside the job sharing its instance.
  ShareTerm term;
  bool restart = false;
  int plan_failures = 0;  // device failures carrying out its plan, in a row
  std::string last_device_error;
  int failed_exits = 0;  // kFailed exits (not memory)
  // The current attempt.
  device::JobRunId run = 0;
  device::MigInstanceId instance = 0;
  std::int64_t instance_memory = 0;
  std::optional<PeakPredictor> predictor;
  bool stop_requested = false;  // early restart asked for (or refused: not asked again)
  bool stopped_early = false;   // stop_job accepted for an early restart
  EarlyRestart stop;            // what the accepted stop restarts it with
  JobOutcome outcome;
};

class Manager final : public device::MigJobObserver {
 public:
  Manager(device::MigDevice& device, const LayoutSpace& space,
          const std::vector<workload::BatchJobPtr>& jobs, const ManagerOptions& options,
          const ProgressFn& progress)
      : device_(device),
        space_(space),
        options_(options),
        progress_(progress),
        caps_(device.capabilities()),
        sharing_(options.scheme == Scheme::kTimeFit && options.co_run &&
                 caps_.jobs_per_instance >= 2),
        restarts_(space, options.scheme, options.static_layout),
        order_(profile_order(space)) {
    // Jobs with the same work (key, and length where the work varies) share a class: their pair
    // slowdowns are the same. A job without a work key is a class of its own.
    std::map<std::pair<std::string, std::int64_t>, std::size_t> classes;
    std::size_t next_class = 0;
    for (const workload::BatchJobPtr& job : jobs) {
      JobState js;
      js.job = job;
      if (job->work.key.empty()) {
        js.work_class = next_class++;
      } else {
        const auto [it, added] = classes.try_emplace(
            {job->work.key, job->work.varies ? job->iterations : 0}, next_class);
        if (added) ++next_class;
        js.work_class = it->second;
      }
      js.outcome.name = job->name;
      js.outcome.submitted = job->submit_time;
      js.outcome.estimated_peak_bytes = job->estimated_peak_bytes;
      jobs_.push_back(std::move(js));
    }
  }

  core::Result<MigRunResult> run() {
    TESSERA_TRY(adopt());
    if (options_.scheme == Scheme::kStatic) {
      if (auto st = setup_static(); !st) return fail_after_cleanup(st.error());
    }
    schedule_releases();
    if (!jobs_.empty()) {
      const auto total = static_cast<std::int64_t>(jobs_.size());
      auto st = device_.run(
          [&] { return fatal_.has_value() || resolved_ == total || stopped_and_idle(); });
      if (!st) return fail_after_cleanup(st.error());
      if (fatal_) return fail_after_cleanup(*fatal_);
    }
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      if (jobs_[j].phase == Phase::kResolved) continue;
      if (stopping_) {
        // Not resolved: a later run of the same jobs runs it.
        jobs_[j].outcome.resolved = false;
        jobs_[j].outcome.reason =
            fmt::format("the run stopped ({}) before it finished", *stopping_);
        continue;
      }
      // Nothing is left to happen and a job is still unresolved: no plan existed for it even
      // with the GPU idle. It is reported, not lost.
      resolve(j, false,
              fmt::format("no instance could be planned for it on {}",
                          describe(space_.geometry(), current_layout())));
    }
    TESSERA_TRY(cleanup());

    MigRunResult result;
    result.gpu = space_.geometry().gpu;
    result.scheme = options_.scheme;
    for (JobState& js : jobs_) {
      result.makespan = std::max(result.makespan, js.outcome.finished);
      result.jobs.push_back(std::move(js.outcome));
    }
    result.reconfigurations = std::move(reconfigurations_);
    result.energy_joules = device_.stats().energy_joules;
    result.oom_restarts = oom_restarts_;
    result.early_restarts = early_restarts_;
    result.shared_starts = shared_starts_;
    result.stopped = stopping_.value_or("");
    return result;
  }

  void on_sample(const device::JobSample& s) override {
    auto it = runs_.find(s.run);
    if (it == runs_.end()) return;
    JobState& js = jobs_[it->second];
    js.outcome.actual_peak_bytes = std::max(js.outcome.actual_peak_bytes, s.reserved_bytes);
    js.predictor->add(s.iteration, s.requested_bytes, s.reserved_bytes);
    if (stopping_ || !options_.early_restart || !caps_.memory_samples || js.stop_requested) return;
    const auto early =
        restarts_.early_restart(js.predictor->predict(), js.outcome.attempts.back().profile_id,
                                js.instance_memory, js.need);
    if (!early) return;
    js.stop_requested = true;
    js.stop = *early;
    // A refused stop leaves the job running; it restarts if it does run out of memory.
    js.stopped_early = device_.stop_job(s.run).has_value();
  }

  void on_exit(const device::JobExit& e) override {
    auto it = runs_.find(e.run);
    if (it == runs_.end()) return;
    const std::size_t j = it->second;
    runs_.erase(it);
    JobState& js = jobs_[j];
    if (auto inst = instances_.find(js.instance); inst != instances_.end()) {
      InstanceInfo& info = inst->second;
      std::erase(info.jobs, j);
      info.free_at = e.at;  // whatever was predicted, it is free now
      if (!info.jobs.empty()) {
        // The job left runs alone from now.
        JobState& other = jobs_[info.jobs.front()];
        other.term = survivor(other.term, js.term, e.at);
        info.free_at = other.term.begins + other.term.work;
      }
    }
    Attempt& a = js.outcome.attempts.back();
    a.ended = e.at;
    a.exit = e.kind;
    a.iterations_done = e.iterations_done;
    js.outcome.actual_peak_bytes = std::max(js.outcome.actual_peak_bytes, e.peak_reserved_bytes);
    const auto prediction = js.predictor->predict();
    js.predictor.reset();
    if (stopping_ && e.kind != device::JobExitKind::kCompleted) {
      js.phase = Phase::kQueued;  // stopped by the run's stop: left for a later run
      return;
    }
    const hw::MigProfile* profile = space_.geometry().find(a.profile_id);
    const std::string profile_name =
        profile ? profile->name : fmt::format("profile {}", a.profile_id);

    switch (e.kind) {
      case device::JobExitKind::kCompleted: resolve(j, true, ""); break;
      case device::JobExitKind::kOutOfMemory: {
        const auto restart = restarts_.after_out_of_memory(
            a.profile_id, js.need, js.outcome.actual_peak_bytes, prediction);
        if (!restart) {
          resolve(j, false,
                  fmt::format("ran out of memory on {}, the largest instance it can get ({}), at "
                              "iteration {} with {} reserved",
                              profile_name, format_gib(js.instance_memory), e.iterations_done,
                              format_gib(e.peak_reserved_bytes)));
          break;
        }
        ++oom_restarts_;
        requeue(j, restart->need_bytes, restart->min_profile_id);
        break;
      }
      case device::JobExitKind::kKilled:
        if (js.stopped_early) {
          a.early_restart = true;
          a.predicted_peak_bytes = js.stop.predicted_peak_bytes;
          ++early_restarts_;
          requeue(j, js.stop.restart.need_bytes, js.stop.restart.min_profile_id);
          break;
        }
        on_failed(j, "killed outside tessera", profile_name);
        break;
      case device::JobExitKind::kFailed: on_failed(j, e.message, profile_name); break;
    }
    pump();
  }

 private:
  // A job that fails other than by memory is retried once on the same profile.
  void on_failed(std::size_t j, const std::string& message, const std::string& profile_name) {
    JobState& js = jobs_[j];
    if (js.failed_exits++ == 0) {
      requeue(j, js.need, js.outcome.attempts.back().profile_id);
      return;
    }
    resolve(j, false, fmt::format("failed twice on {}: {}", profile_name, message));
  }

  void requeue(std::size_t j, std::int64_t need, std::optional<int> min_profile) {
    JobState& js = jobs_[j];
    js.phase = Phase::kQueued;
    js.need = need;
    js.min_profile = min_profile;
    js.restart = true;
  }

  void resolve(std::size_t j, bool completed, std::string reason) {
    JobState& js = jobs_[j];
    js.phase = Phase::kResolved;
    js.outcome.completed = completed;
    js.outcome.reason = std::move(reason);
    js.outcome.finished = device_.executor().now();
    ++resolved_;
    if (options_.on_resolved) options_.on_resolved(js.outcome);
    if (progress_) {
      progress_(Progress{.finished = resolved_,
                         .total = static_cast<std::int64_t>(jobs_.size()),
                         .now = js.outcome.finished});
    }
  }

  bool in_space(int profile_id) const {
    return std::ranges::any_of(order_,
                               [&](const hw::MigProfile* p) { return p->id == profile_id; });
  }

  Layout current_layout() const {
    Layout layout;
    for (const auto& [id, info] : instances_) {
      layout.instances.push_back({info.instance.profile_id, info.instance.start});
    }
    std::ranges::sort(layout.instances, [](const Placement& a, const Placement& b) {
      return std::make_pair(a.start, a.profile_id) < std::make_pair(b.start, b.profile_id);
    });
    return layout;
  }

  core::Result<StateId> current_state() const {
    const Layout layout = current_layout();
    if (auto s = space_.find(layout)) return *s;
    return core::failf(core::Domain::kMig, core::Code::kInternal,
                       "the GPU's instances ({}) are not a layout of the scheduler's space",
                       describe(space_.geometry(), layout));
  }

  std::optional<device::MigInstanceId> instance_at(const Placement& p) const {
    for (const auto& [id, info] : instances_) {
      if (info.instance.profile_id == p.profile_id && info.instance.start == p.start) return id;
    }
    return std::nullopt;
  }

  // Instances that exist before the run are used as idle ones when the scheduler could have made
  // them; anything else is left alone and the run refused.
  core::Status adopt() {
    std::vector<std::string> foreign;
    for (const device::MigInstance& inst : device_.instances()) {
      if (!in_space(inst.profile_id)) {
        const hw::MigProfile* p = space_.geometry().find(inst.profile_id);
        foreign.push_back(fmt::format(
            "{}@{}", p ? p->name : fmt::format("profile {}", inst.profile_id), inst.start));
      }
      instances_[inst.id] = InstanceInfo{inst, false, {}, 0};
    }
    if (!foreign.empty()) {
      return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                         "{} has GPU instances whose profiles the scheduler does not hand out: "
                         "{}; destroy them or allow their profiles",
                         space_.geometry().gpu, fmt::join(foreign, ", "));
    }
    if (auto s = current_state(); !s) {
      return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                         "{} has GPU instances that are not a valid layout: {}",
                         space_.geometry().gpu, describe(space_.geometry(), current_layout()));
    }
    return {};
  }

  // The static layout is created once, up front: idle instances outside it are destroyed (they
  // are in the space, or adopt() refused the run) and missing ones created, each step tried up
  // to kMaxPlanFailures times.
  core::Status setup_static() {
    const Layout& want = options_.static_layout;
    if (want.instances.empty()) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "the static scheme needs a layout; none was given");
    }
    if (auto st = check_layout(space_.geometry(), want); !st) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "the static layout {} is not valid on {}: {}",
                         describe(space_.geometry(), want), space_.geometry().gpu,
                         st.error().message());
    }
    if (!space_.find(want)) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "the static layout {} uses profiles outside the scheduler's profiles",
                         describe(space_.geometry(), want));
    }
    for (int tries = 0;; ++tries) {
      auto st = converge_to(want);
      if (st) return {};
      if (tries + 1 >= kMaxPlanFailures) {
        return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                           "could not create the static layout {}: {}",
                           describe(space_.geometry(), want), st.error().message());
      }
      TESSERA_TRY(resync());
    }
  }

  core::Status converge_to(const Layout& want) {
    std::vector<device::MigInstanceId> extra;
    for (const auto& [id, info] : instances_) {
      const Placement p{info.instance.profile_id, info.instance.start};
      if (std::ranges::find(want.instances, p) == want.instances.end()) extra.push_back(id);
    }
    for (device::MigInstanceId id : extra) {
      TESSERA_TRY(device_.destroy_instance(id));
      instances_.erase(id);
    }
    for (const Placement& p : want.instances) {
      if (instance_at(p)) continue;
      TESSERA_TRY(create(p, PlanKind::kPlace, {}, "static layout"));
    }
    return {};
  }

  core::Status create(const Placement& p, PlanKind kind, std::vector<Placement> destroyed,
                      const std::string& for_job) {
    TESSERA_ASSIGN_OR_RETURN(device::MigInstance inst,
                             device_.create_instance(p.profile_id, p.start));
    reconfig_free_at_ =
        std::max(device_.executor().now(), reconfig_free_at_) + options_.time_fit.create_time;
    instances_[inst.id] = InstanceInfo{inst, true, {}, reconfig_free_at_};
    if (inst.profile_id != p.profile_id || inst.start != p.start) {
      return core::failf(core::Domain::kMig, core::Code::kInternal,
                         "asked for profile {} at slice {}, the device created profile {} at {}",
                         p.profile_id, p.start, inst.profile_id, inst.start);
    }
    reconfigurations_.push_back(ReconfigEvent{.at = device_.executor().now(),
                                              .kind = kind,
                                              .destroyed = std::move(destroyed),
                                              .created = p,
                                              .for_job = for_job,
                                              .error = {}});
    return {};
  }

  // The device is the source of truth after a failed call: instances it still has are kept (with
  // what ran on them), vanished idle ones forgotten; a vanished busy one cannot be explained.
  core::Status resync() {
    std::map<device::MigInstanceId, InstanceInfo> next;
    for (const device::MigInstance& inst : device_.instances()) {
      InstanceInfo info{inst, false, {}, 0};
      if (auto it = instances_.find(inst.id); it != instances_.end()) {
        info.ours = it->second.ours;
        info.jobs = it->second.jobs;
        info.free_at = it->second.free_at;
      } else if (!in_space(inst.profile_id)) {
        return core::failf(core::Domain::kMig, core::Code::kInternal,
                           "an instance of profile {} at slice {} appeared that the scheduler "
                           "does not hand out",
                           inst.profile_id, inst.start);
      }
      next[inst.id] = info;
    }
    for (const auto& [id, info] : instances_) {
      if (!info.jobs.empty() && !next.contains(id)) {
        return core::failf(core::Domain::kMig, core::Code::kInternal,
                           "the instance running job '{}' vanished from the device",
                           jobs_[info.jobs.front()].job->name);
      }
    }
    instances_ = std::move(next);
    TESSERA_TRY(current_state());
    return {};
  }

  void schedule_releases() {
    std::map<core::Nanos, std::vector<std::size_t>> by_time;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      by_time[jobs_[j].job->submit_time].push_back(j);
    }
    // Jobs submitted together are released together, so scheme A sorts the whole batch.
    for (auto& [at, group] : by_time) {
      device_.executor().schedule_at(at, [this, group = std::move(group)] {
        for (std::size_t j : group) {
          jobs_[j].phase = Phase::kQueued;
          jobs_[j].need = jobs_[j].job->estimated_peak_bytes;
          predict_times(jobs_[j]);
          predict_co_runs(j);
        }
        pump();
      });
    }
  }

  // Time-fit's prediction of the job's run time on each profile; a profile the model cannot time
  // is left out, and the scheduler scales another's time to it.
  void predict_times(JobState& js) const {
    if (options_.scheme != Scheme::kTimeFit || !options_.job_time || !js.times.empty()) return;
    for (const hw::MigProfile* p : order_) {
      if (auto t = options_.job_time(*js.job, *p)) js.times.push_back({p->id, *t});
    }
  }

  // Time-fit's slowdowns of a released job beside every other job released and unresolved, per
  // pair of work classes, on each profile that holds both jobs' estimated peaks; each pair of
  // classes is asked once per profile, and one the model cannot time never shares. Jobs without
  // kernels cannot be timed beside another.
  void predict_co_runs(std::size_t j) {
    const JobState& js = jobs_[j];
    if (!sharing_ || !js.job->work.build) return;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const JobState& other = jobs_[i];
      if (i == j || other.phase == Phase::kWaiting || other.phase == Phase::kResolved ||
          !other.job->work.build) {
        continue;
      }
      const JobState& low = js.work_class <= other.work_class ? js : other;
      const JobState& high = &low == &js ? other : js;
      for (const hw::MigProfile* p : order_) {
        const CoRunKey key{low.work_class, high.work_class, p->id};
        if (js.need + other.need > p->memory_bytes || !co_runs_asked_.insert(key).second) {
          continue;
        }
        auto s = options_.co_run(*low.job, *high.job, *p);
        if (!s || !(s->first > 0) || !(s->second > 0)) continue;
        co_runs_[key] = Slowdowns{.first = s->first, .second = s->second};
      }
    }
  }

  core::Nanos predicted_time(const JobState& js, int profile_id) const {
    for (const ProfileTime& t : js.times) {
      if (t.profile_id == profile_id) return t.time;
    }
    return 0;
  }

  SchedulerInput scheduler_input(StateId state) const {
    SchedulerInput in;
    in.space = &space_;
    in.current = state;
    in.scheme = options_.scheme;
    in.static_layout = options_.static_layout;
    in.now = device_.executor().now();
    in.time_fit = options_.time_fit;
    in.reconfig_free_at = reconfig_free_at_;
    in.jobs_per_instance = sharing_ ? caps_.jobs_per_instance : 1;
    in.co_runs = &co_runs_;
    for (const auto& [id, info] : instances_) {
      const Placement p{info.instance.profile_id, info.instance.start};
      in.free_at[p] = info.free_at;
      if (info.jobs.empty()) continue;
      in.busy.insert(p);
      for (const std::size_t j : info.jobs) {
        in.running[p].push_back(RunningJob{.job = j,
                                           .work_class = jobs_[j].work_class,
                                           .need_bytes = jobs_[j].need,
                                           .term = jobs_[j].term});
      }
    }
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      const JobState& js = jobs_[j];
      if (js.phase != Phase::kQueued) continue;
      in.queue.push_back(QueuedJob{.job = j,
                                   .name = js.job->name,
                                   .need_bytes = js.need,
                                   .min_profile_id = js.min_profile,
                                   .submitted = js.job->submit_time,
                                   .restart = js.restart,
                                   .times = js.times,
                                   .work_class = js.work_class});
    }
    return in;
  }

  bool anything_runs() const { return !runs_.empty(); }

  // Asks options_.stop after each event; once it says stop, every running job is stopped and
  // the loop ends when the last has exited.
  bool stopped_and_idle() {
    if (!stopping_ && options_.stop) {
      if (auto why = options_.stop()) {
        stopping_ = std::move(why);
        for (const auto& [run, j] : runs_) (void)device_.stop_job(run);
      }
    }
    return stopping_ && runs_.empty();
  }

  // Asks the scheduler and carries its decisions out. After a device failure the state is read
  // back from the device; the job stays queued and is tried again at once while nothing runs
  // (no event would come to retry it), otherwise at the next event.
  void pump() {
    while (!fatal_ && !stopping_) {
      auto state = current_state();
      if (!state) {
        fatal_ = state.error();
        return;
      }
      const SchedulerInput in = scheduler_input(*state);
      if (in.queue.empty()) return;
      const Decisions decisions = schedule(in);
      for (const GiveUp& g : decisions.give_ups) resolve(g.job, false, g.reason);
      bool failed = false;
      for (const StartDecision& d : decisions.starts) {
        if (auto st = carry_out(d); !st) {
          JobState& js = jobs_[d.job];
          ++js.plan_failures;
          js.last_device_error = st.error().message();
          if (auto rs = resync(); !rs) fatal_ = rs.error();
          failed = true;
          break;
        }
      }
      if (!failed || anything_runs()) return;
      for (std::size_t j = 0; j < jobs_.size(); ++j) {
        JobState& js = jobs_[j];
        if (js.phase == Phase::kQueued && js.plan_failures >= kMaxPlanFailures) {
          resolve(j, false,
                  fmt::format("the device refused its instance {} times: {}", js.plan_failures,
                              js.last_device_error));
        }
      }
    }
  }

  core::Status carry_out(const StartDecision& d) {
    JobState& js = jobs_[d.job];
    const ReconfigPlan& plan = d.plan;
    std::vector<Placement> destroyed;
    for (const Placement& p : plan.destroy) {
      const auto id = instance_at(p);
      if (!id || !instances_.at(*id).jobs.empty()) {
        return core::failf(core::Domain::kMig, core::Code::kInternal,
                           "the plan destroys an instance that is {} ({}@{})",
                           id ? "busy" : "absent", p.profile_id, p.start);
      }
      TESSERA_TRY(device_.destroy_instance(*id));
      instances_.erase(*id);
      destroyed.push_back(p);
      reconfig_free_at_ =
          std::max(device_.executor().now(), reconfig_free_at_) + options_.time_fit.destroy_time;
    }
    const bool share = plan.kind == PlanKind::kShare;
    if (share && !instance_at(plan.instance)) {
      return core::failf(core::Domain::kMig, core::Code::kInternal,
                         "the plan shares an absent instance ({}@{}) with job '{}'",
                         plan.instance.profile_id, plan.instance.start, js.job->name);
    }
    if (!share && (plan.kind != PlanKind::kReuse || !instance_at(plan.instance))) {
      if (auto st = create(plan.instance, plan.kind, destroyed, js.job->name); !st) {
        if (!destroyed.empty()) {
          reconfigurations_.push_back(ReconfigEvent{.at = device_.executor().now(),
                                                    .kind = plan.kind,
                                                    .destroyed = std::move(destroyed),
                                                    .created = plan.instance,
                                                    .for_job = js.job->name,
                                                    .error = st.error().message()});
        }
        return st;
      }
    }
    const device::MigInstanceId id = *instance_at(plan.instance);
    InstanceInfo& info = instances_.at(id);
    if (info.jobs.size() != (share ? 1U : 0U)) {
      return core::failf(core::Domain::kMig, core::Code::kInternal,
                         "the plan starts job '{}' on an instance that runs {} job(s)",
                         js.job->name, info.jobs.size());
    }
    TESSERA_ASSIGN_OR_RETURN(device::JobRunId run, device_.start_job(id, js.job, *this));
    const core::Nanos now = device_.executor().now();
    const core::Nanos work = predicted_time(js, plan.instance.profile_id);
    if (share) {
      // The job it joins has run alone until now; from when this one begins they share.
      const std::size_t k = info.jobs.front();
      JobState& other = jobs_[k];
      const auto s = slowdowns(co_runs_, other.work_class, js.work_class, plan.instance.profile_id)
                         .value_or(std::pair{1.0, 1.0});
      std::tie(other.term, js.term) = join(other.term, now, options_.time_fit.start_time, work, s);
      const auto ends = shared_ends(other.term, js.term);
      info.free_at = std::max(ends.first, ends.second);
      ++shared_starts_;
    } else {
      js.term = ShareTerm{.begins = std::max(now, info.free_at) + options_.time_fit.start_time,
                          .work = work,
                          .slowdown = 1};
      info.free_at = js.term.begins + work;
    }
    const std::string beside = share ? jobs_[info.jobs.front()].job->name : std::string();
    info.jobs.push_back(d.job);
    runs_[run] = d.job;
    js.phase = Phase::kRunning;
    js.plan_failures = 0;
    js.run = run;
    js.instance = id;
    js.instance_memory = info.instance.memory_bytes;
    js.predictor.emplace(js.job->iterations, js.job->declared_steps, options_.predictor);
    js.stop_requested = false;
    js.stopped_early = false;
    js.stop = {};
    js.outcome.attempts.push_back(Attempt{.profile_id = plan.instance.profile_id,
                                          .start = plan.instance.start,
                                          .started = device_.executor().now(),
                                          .beside = beside});
    return {};
  }

  // Leaves the GPU as found: every instance this run created is destroyed (they are all idle
  // once every job is resolved). A refused destroy is retried after a resync.
  core::Status cleanup() {
    for (int tries = 0;; ++tries) {
      core::Status st;
      std::vector<device::MigInstanceId> ours;
      for (const auto& [id, info] : instances_) {
        if (info.ours && info.jobs.empty()) ours.push_back(id);
      }
      for (device::MigInstanceId id : ours) {
        st = device_.destroy_instance(id);
        if (!st) break;
        instances_.erase(id);
      }
      if (st) return {};
      if (tries + 1 >= kMaxPlanFailures) {
        return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                           "could not destroy the instances this run created: {}",
                           st.error().message());
      }
      TESSERA_TRY(resync());
    }
  }

  core::Result<MigRunResult> fail_after_cleanup(const core::Error& error) {
    (void)cleanup();  // best effort; the first error is the one reported
    return std::unexpected(error);
  }

  device::MigDevice& device_;
  const LayoutSpace& space_;
  const ManagerOptions& options_;
  const ProgressFn& progress_;
  device::MigCapabilities caps_;
  bool sharing_ = false;  // time-fit may start a job on an instance that runs another
  RestartPolicy restarts_;
  std::vector<const hw::MigProfile*> order_;
  std::vector<JobState> jobs_;
  std::map<device::MigInstanceId, InstanceInfo> instances_;
  std::map<device::JobRunId, std::size_t> runs_;
  std::vector<ReconfigEvent> reconfigurations_;
  // When the reconfigurations carried out so far are predicted to end, for time-fit.
  core::Nanos reconfig_free_at_ = 0;
  std::optional<core::Error> fatal_;
  std::optional<std::string> stopping_;  // why the run stops (ManagerOptions::stop)
  std::int64_t resolved_ = 0;
  std::int64_t oom_restarts_ = 0;
  std::int64_t early_restarts_ = 0;
  std::int64_t shared_starts_ = 0;
  CoRunTable co_runs_;  // time-fit's slowdowns of the pairs of classes released so far
  std::unordered_set<CoRunKey, CoRunKeyHash> co_runs_asked_;
};

}  // namespace

core::Result<MigRunResult> run_jobs(device::MigDevice& device,
                                    const std::vector<workload::BatchJobPtr>& jobs,
                                    const ManagerOptions& options, const ProgressFn& progress) {
  TESSERA_ASSIGN_OR_RETURN(LayoutSpace space,
                           LayoutSpace::build(device.geometry(), options.profile_ids));
  Manager manager(device, space, jobs, options, progress);
  return manager.run();
}

}  // namespace tessera::mig
