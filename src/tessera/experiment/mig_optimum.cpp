#include "tessera/experiment/mig_optimum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/mig/policy/co_run.hpp"
#include "tessera/mig/policy/layout_space.hpp"

namespace tessera::experiment {
namespace {

using core::Nanos;

struct Job {
  std::string name;
  std::int64_t peak = 0;
  std::map<int, Nanos> time;  // by profile ID: its run alone on every profile that holds it
  // Its least slice-time, compute and memory, over those profiles (slice-seconds).
  double compute_area = 0;
  double memory_area = 0;
};

struct Running {
  std::size_t job = 0;
  mig::ShareTerm term;
};

struct Instance {
  mig::Placement placement;
  const hw::MigProfile* profile = nullptr;
  Nanos ready = 0;            // made by then
  std::vector<Running> runs;  // at most jobs_per_instance
};

struct State {
  Nanos now = 0;
  Nanos driver_free = 0;  // the driver makes and destroys instances one at a time
  mig::StateId layout = 0;
  std::vector<Instance> instances;
  std::uint32_t queued = 0;  // a bit per job not yet started
};

struct Decision {
  enum class Kind { kStart, kMake, kJoin, kDestroy };
  Kind kind = Kind::kStart;
  Nanos at = 0;
  mig::Placement placement;
  std::size_t job = 0;     // the job that starts (kStart, kMake, kJoin)
  std::size_t beside = 0;  // the job it joins (kJoin)
};

// When the run of instance `in`'s k-th job ends, with no job joining it.
Nanos end_of(const Instance& in, std::size_t k) {
  if (in.runs.size() == 1) return in.runs[0].term.begins + in.runs[0].term.work;
  const auto [a, b] = mig::shared_ends(in.runs[0].term, in.runs[1].term);
  return k == 0 ? a : b;
}

class Search {
 public:
  Search(std::vector<Job> jobs,
         std::map<std::tuple<std::size_t, std::size_t, int>, std::pair<double, double>> pairs,
         const mig::LayoutSpace& space, const MigBoundCosts& costs, const MigOptimumLimits& limits)
      : jobs_(std::move(jobs)),
        pairs_(std::move(pairs)),
        space_(space),
        costs_(costs),
        limits_(limits) {
    for (const auto& [key, s] : pairs_) gain_ = std::max(gain_, 1 / s.first + 1 / s.second);
  }

  void run(Nanos submitted) {
    State s;
    s.now = submitted;
    s.driver_free = submitted;
    s.layout = space_.empty_state();
    s.queued = static_cast<std::uint32_t>((std::uint64_t{1} << jobs_.size()) - 1);
    destroy_then_decide(s);
  }

  std::optional<Nanos> best() const { return best_; }
  bool stopped() const { return stopped_; }
  std::int64_t steps() const { return steps_; }
  const std::vector<Decision>& best_decisions() const { return best_decisions_; }
  const std::vector<Job>& jobs() const { return jobs_; }

 private:
  // No schedule from `s` ends before this: every queued job's fastest run after a process start,
  // every running job's predicted end (a partner joining later only slows it), and the slice-time
  // the work left needs when every slice runs its most productive pair.
  Nanos lower_bound(const State& s) const {
    Nanos bound = s.now;
    double compute = 0, memory = 0;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      if (!(s.queued >> j & 1)) continue;
      compute += jobs_[j].compute_area;
      memory += jobs_[j].memory_area;
      Nanos fastest = std::numeric_limits<Nanos>::max();
      for (const auto& [id, t] : jobs_[j].time) fastest = std::min(fastest, t);
      bound = std::max(bound, s.now + costs_.start_time + fastest);
    }
    for (const Instance& in : s.instances) {
      for (std::size_t k = 0; k < in.runs.size(); ++k) {
        bound = std::max(bound, end_of(in, k));
        const Running& r = in.runs[k];
        const Nanos left =
            in.runs.size() == 1
                ? std::clamp<Nanos>(r.term.begins + r.term.work - s.now, 0, r.term.work)
                : mig::work_left_at(r.term, in.runs[1 - k].term, s.now);
        const Nanos whole = jobs_[r.job].time.at(in.profile->id);
        const double share = whole > 0 ? static_cast<double>(left) / static_cast<double>(whole) : 0;
        compute += share * jobs_[r.job].compute_area;
        memory += share * jobs_[r.job].memory_area;
      }
    }
    const double slices = std::max(compute / hw::kMigComputeSlices, memory / hw::kMigMemorySlices);
    return std::max(bound, s.now + static_cast<Nanos>(slices / gain_ * 1e9));
  }

  bool cut(const State& s) const { return stopped_ || (best_ && lower_bound(s) >= *best_); }

  // At a decision moment: which idle instances to destroy (any of them; the driver destroys
  // before it makes), then each queued job in turn.
  void destroy_then_decide(const State& s) {
    std::vector<std::size_t> idle;
    for (std::size_t i = 0; i < s.instances.size(); ++i) {
      if (s.instances[i].runs.empty()) idle.push_back(i);
    }
    for (std::uint32_t chosen = 0; chosen < (std::uint32_t{1} << idle.size()); ++chosen) {
      State next = s;
      const std::size_t marked = trail_.size();
      // From the last, so that the indices left stay valid.
      for (std::size_t k = idle.size(); k-- > 0;) {
        if (!(chosen >> k & 1)) continue;
        const mig::Placement p = s.instances[idle[k]].placement;
        next.layout = *space_.after_destroy(next.layout, p);
        next.instances.erase(next.instances.begin() + static_cast<std::ptrdiff_t>(idle[k]));
        next.driver_free = std::max(next.now, next.driver_free) + costs_.destroy_time;
        trail_.push_back({.kind = Decision::Kind::kDestroy, .at = s.now, .placement = p});
      }
      decide(next, 0);
      trail_.resize(marked);
    }
  }

  // Decides queued job j onward at s.now: each may start on an instance or wait.
  void decide(const State& s, std::size_t j) {
    if (j == jobs_.size()) {
      const bool runs =
          std::ranges::any_of(s.instances, [](const Instance& in) { return !in.runs.empty(); });
      if (runs || s.queued == 0) advance(s);  // with nothing running, waiting never ends
      return;
    }
    if (!(s.queued >> j & 1)) return decide(s, j + 1);
    if (cut(s)) return;
    State base = s;
    base.queued &= ~(std::uint32_t{1} << j);
    const Job& job = jobs_[j];
    for (std::size_t i = 0; i < s.instances.size(); ++i) {
      const Instance& in = s.instances[i];
      const auto t = job.time.find(in.placement.profile_id);
      if (t == job.time.end()) continue;
      const Nanos begins = std::max(s.now, in.ready) + costs_.start_time;
      if (in.runs.empty()) {
        State next = base;
        next.instances[i].runs.push_back({j, {.begins = begins, .work = t->second, .slowdown = 1}});
        step(next, j,
             {.kind = Decision::Kind::kStart, .at = s.now, .placement = in.placement, .job = j});
      } else if (in.runs.size() == 1) {
        const Running& partner = in.runs[0];
        const auto slowdowns = pair(partner.job, j, in.placement.profile_id);
        if (!slowdowns) continue;
        State next = base;
        Running& p = next.instances[i].runs[0];
        // The partner ran alone until now; from now it is slowed once this job's work begins.
        if (p.term.begins < s.now) {
          p.term.work = std::max<Nanos>(0, p.term.work - (s.now - p.term.begins));
          p.term.begins = s.now;
        }
        p.term.slowdown = slowdowns->first;
        next.instances[i].runs.push_back(
            {j, {.begins = begins, .work = t->second, .slowdown = slowdowns->second}});
        step(next, j,
             {.kind = Decision::Kind::kJoin,
              .at = s.now,
              .placement = in.placement,
              .job = j,
              .beside = partner.job});
      }
    }
    // A new instance where the layout has room for it.
    for (const auto& [id, t] : job.time) {
      const hw::MigProfile* profile = space_.geometry().find(id);
      for (const int start : profile->placement_starts) {
        const mig::Placement placement{.profile_id = id, .start = start};
        const auto layout = space_.after_create(s.layout, placement);
        if (!layout) continue;
        State next = base;
        next.layout = *layout;
        const Nanos ready = std::max(s.now, s.driver_free) + costs_.create_time;
        next.driver_free = ready;
        next.instances.push_back(
            {.placement = placement,
             .profile = profile,
             .ready = ready,
             .runs = {{j, {.begins = ready + costs_.start_time, .work = t, .slowdown = 1}}}});
        step(next, j,
             {.kind = Decision::Kind::kMake, .at = s.now, .placement = placement, .job = j});
      }
    }
    decide(s, j + 1);  // it waits
  }

  void step(const State& next, std::size_t j, const Decision& d) {
    trail_.push_back(d);
    decide(next, j + 1);
    trail_.pop_back();
  }

  // To the next job's end, which frees its place: a pair's survivor runs on alone.
  void advance(State s) {
    if (++steps_ > limits_.max_steps) stopped_ = true;
    if (s.queued == 0) {
      Nanos makespan = s.now;
      for (const Instance& in : s.instances) {
        for (std::size_t k = 0; k < in.runs.size(); ++k)
          makespan = std::max(makespan, end_of(in, k));
      }
      if (!best_ || makespan < *best_) {
        best_ = makespan;
        best_decisions_ = trail_;
      }
      return;
    }
    if (cut(s)) return;
    std::optional<std::pair<std::size_t, std::size_t>> first;
    Nanos at = 0;
    for (std::size_t i = 0; i < s.instances.size(); ++i) {
      for (std::size_t k = 0; k < s.instances[i].runs.size(); ++k) {
        const Nanos e = end_of(s.instances[i], k);
        if (!first || e < at) {
          first = {i, k};
          at = e;
        }
      }
    }
    Instance& in = s.instances[first->first];
    if (in.runs.size() == 2) {
      Running survivor = in.runs[1 - first->second];
      const Nanos left = mig::work_left_at(survivor.term, in.runs[first->second].term, at);
      // Still starting, its work begins when its process is up.
      survivor.term = {.begins = std::max(at, survivor.term.begins), .work = left, .slowdown = 1};
      in.runs = {survivor};
    } else {
      in.runs.clear();
    }
    s.now = at;
    destroy_then_decide(s);
  }

  // The slowdowns of `a` and `b` side by side on the profile, in that order; nullopt where they
  // never share it (too large together, one job to an instance, or a pair the model cannot time).
  std::optional<std::pair<double, double>> pair(std::size_t a, std::size_t b, int profile) const {
    const bool swapped = b < a;
    const auto it = pairs_.find({std::min(a, b), std::max(a, b), profile});
    if (it == pairs_.end()) return std::nullopt;
    return swapped ? std::pair{it->second.second, it->second.first} : it->second;
  }

  std::vector<Job> jobs_;
  std::map<std::tuple<std::size_t, std::size_t, int>, std::pair<double, double>> pairs_;
  const mig::LayoutSpace& space_;
  MigBoundCosts costs_;
  MigOptimumLimits limits_;
  double gain_ = 1;  // the most work per second any pair does on its slices, or 1 alone
  std::optional<Nanos> best_;
  std::vector<Decision> best_decisions_;
  std::vector<Decision> trail_;
  std::int64_t steps_ = 0;
  bool stopped_ = false;
};

std::string describe(const Decision& d, Nanos submitted, const std::vector<Job>& jobs,
                     const hw::MigGeometry& geometry) {
  const std::string where =
      fmt::format("{}@{}", geometry.find(d.placement.profile_id)->name, d.placement.start);
  const std::string what = [&] {
    switch (d.kind) {
      case Decision::Kind::kStart: return fmt::format("{} on {}", jobs[d.job].name, where);
      case Decision::Kind::kMake: return fmt::format("{} on {} (made)", jobs[d.job].name, where);
      case Decision::Kind::kJoin:
        return fmt::format("{} beside {} on {}", jobs[d.job].name, jobs[d.beside].name, where);
      case Decision::Kind::kDestroy: return fmt::format("destroy {}", where);
    }
    return std::string();
  }();
  return fmt::format("{:.3f} s: {}", core::to_seconds(d.at - submitted), what);
}

}  // namespace

core::Result<MigOptimum> mig_optimum(const std::vector<workload::BatchJobPtr>& jobs,
                                     const hw::MigGeometry& geometry, sim::SliceCostModel& model,
                                     const MigBoundCosts& costs, int jobs_per_instance,
                                     const MigOptimumLimits& limits) {
  const auto skipped = [](std::string why) {
    MigOptimum out;
    out.not_searched = std::move(why);
    return out;
  };
  constexpr std::size_t kMaxJobs = 31;  // the queue is a bit mask
  const std::size_t max_jobs = std::min(limits.max_jobs, kMaxJobs);
  if (jobs.size() > max_jobs)
    return skipped(fmt::format("{} jobs, more than {}", jobs.size(), max_jobs));
  if (jobs.empty()) return skipped("no jobs");
  const Nanos submitted = jobs.front()->submit_time;
  for (const auto& job : jobs) {
    if (job->submit_time != submitted) return skipped("jobs submitted at different times");
  }
  TESSERA_ASSIGN_OR_RETURN(mig::LayoutSpace space, mig::LayoutSpace::build(geometry));
  std::vector<Job> held;
  std::vector<const workload::BatchJob*> batch;
  for (const auto& job : jobs) {
    Job j{.name = job->name,
          .peak = job->memory.peak_reserved(job->iterations),
          .time = {},
          .compute_area = std::numeric_limits<double>::infinity(),
          .memory_area = std::numeric_limits<double>::infinity()};
    for (const int id : space.profile_ids()) {
      const hw::MigProfile& p = *geometry.find(id);
      if (p.memory_bytes < j.peak) continue;
      TESSERA_ASSIGN_OR_RETURN(const Nanos t, model.job_time(*job, p));
      j.time[id] = t;
      j.compute_area = std::min(j.compute_area, core::to_seconds(t) * p.compute_slices);
      j.memory_area = std::min(j.memory_area, core::to_seconds(t) * p.memory_slices);
    }
    if (j.time.empty()) continue;  // every policy gives it up
    held.push_back(std::move(j));
    batch.push_back(job.get());
  }
  if (held.empty()) return skipped("no job fits any profile");
  std::map<std::tuple<std::size_t, std::size_t, int>, std::pair<double, double>> pairs;
  for (std::size_t a = 0; jobs_per_instance > 1 && a < held.size(); ++a) {
    for (std::size_t b = a + 1; b < held.size(); ++b) {
      for (const int id : space.profile_ids()) {
        const hw::MigProfile& p = *geometry.find(id);
        if (held[a].peak + held[b].peak > p.memory_bytes) continue;
        // A pair the model cannot time never shares (the manager is told the same).
        const auto c = model.co_run(*batch[a], *batch[b], p);
        if (c) pairs[{a, b, id}] = {c->slowdown_a, c->slowdown_b};
      }
    }
  }

  Search search(std::move(held), std::move(pairs), space, costs, limits);
  search.run(submitted);
  if (!search.best()) {
    return skipped(
        fmt::format("stopped after {} steps, before any schedule ended", limits.max_steps));
  }
  MigOptimum out;
  out.makespan = *search.best() - submitted;
  out.jobs_per_hour = out.makespan > 0 ? static_cast<double>(search.jobs().size()) * 3600 /
                                             core::to_seconds(out.makespan)
                                       : 0;
  out.complete = !search.stopped();
  out.steps = search.steps();
  for (const Decision& d : search.best_decisions()) {
    out.decisions.push_back(describe(d, submitted, search.jobs(), geometry));
  }
  return out;
}

}  // namespace tessera::experiment
