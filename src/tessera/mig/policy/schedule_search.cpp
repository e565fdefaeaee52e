#include "tessera/mig/policy/schedule_search.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

namespace tessera::mig {
namespace {

using core::Nanos;

struct Running {
  SearchRunning run;
  std::optional<std::size_t> job;  // the queued job, for one started by the search
};

struct Instance {
  Placement placement;
  const hw::MigProfile* profile = nullptr;
  Nanos ready = 0;
  std::vector<Running> runs;
};

struct State {
  Nanos now = 0;
  Nanos driver_free = 0;
  StateId layout = 0;
  std::vector<Instance> instances;
  std::uint32_t queued = 0;  // a bit per queued job not yet started
  std::size_t round = 0;
  Nanos ended = 0;  // the sum of the ends of the jobs that have ended
  // This round destroys instances, and makes one: the manager destroys only to make room.
  bool destroys = false;
  bool makes = false;
};

// When instance `in`'s k-th run ends, with no job joining it.
Nanos end_of(const Instance& in, std::size_t k) {
  if (in.runs.size() == 1) return in.runs[0].run.term.begins + in.runs[0].run.term.work;
  const auto [a, b] = shared_ends(in.runs[0].run.term, in.runs[1].run.term);
  return k == 0 ? a : b;
}

// A schedule's makespan, then the sum of its jobs' ends (the mean turnaround, for jobs waiting
// since the same moment): the first decides, the second breaks ties.
struct Best {
  Nanos makespan = 0;
  Nanos sum = 0;
};

class Search {
 public:
  Search(const LayoutSpace& space, const std::vector<SearchJob>& jobs, const CoRunTable* co_runs,
         int jobs_per_instance, const SearchCosts& costs, const SearchLimits& limits)
      : space_(space),
        jobs_(jobs),
        co_runs_(jobs_per_instance > 1 ? co_runs : nullptr),
        costs_(costs),
        limits_(limits) {
    if (co_runs_ != nullptr) {
      for (const auto& [key, s] : *co_runs_) gain_ = std::max(gain_, 1 / s.first + 1 / s.second);
    }
    for (const SearchJob& j : jobs_) {
      double compute = std::numeric_limits<double>::infinity();
      double memory = compute;
      Nanos fastest = std::numeric_limits<Nanos>::max();
      for (const auto& [id, t] : j.times) {
        const hw::MigProfile& p = *space_.geometry().find(id);
        compute = std::min(compute, core::to_seconds(t) * p.compute_slices);
        memory = std::min(memory, core::to_seconds(t) * p.memory_slices);
        fastest = std::min(fastest, t);
      }
      compute_area_.push_back(compute);
      memory_area_.push_back(memory);
      fastest_.push_back(fastest);
    }
  }

  SearchResult run(const SearchFrom& from) {
    State s;
    s.now = from.now;
    s.driver_free = std::max(from.now, from.driver_free);
    s.layout = from.layout;
    for (const SearchInstance& in : from.instances) {
      Instance i{.placement = in.placement,
                 .profile = space_.geometry().find(in.placement.profile_id),
                 .ready = in.ready,
                 .runs = {}};
      for (const SearchRunning& r : in.runs) i.runs.push_back({r, std::nullopt});
      s.instances.push_back(std::move(i));
    }
    s.queued = static_cast<std::uint32_t>((std::uint64_t{1} << jobs_.size()) - 1);
    destroy_then_decide(s);
    SearchResult out;
    if (best_) {
      out.makespan = best_->makespan;
      out.sum = best_->sum;
    }
    out.complete = !stopped_;
    out.steps = steps_;
    out.schedule = std::move(best_schedule_);
    return out;
  }

 private:
  // What no schedule from `s` ends before, and the least sum of its jobs' ends.
  Best lower_bound(const State& s) const {
    Nanos bound = s.now;
    Nanos sum = s.ended;
    double compute = 0, memory = 0;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      if (!(s.queued >> j & 1)) continue;
      compute += compute_area_[j];
      memory += memory_area_[j];
      bound = std::max(bound, s.now + costs_.start_time + fastest_[j]);
      sum += s.now + costs_.start_time + fastest_[j];
    }
    for (const Instance& in : s.instances) {
      for (std::size_t k = 0; k < in.runs.size(); ++k) {
        bound = std::max(bound, end_of(in, k));
        sum += end_of(in, k);
        const ShareTerm& t = in.runs[k].run.term;
        const Nanos left = in.runs.size() == 1
                               ? std::clamp<Nanos>(t.begins + t.work - s.now, 0, t.work)
                               : work_left_at(t, in.runs[1 - k].run.term, s.now);
        compute += core::to_seconds(left) * in.profile->compute_slices;
        memory += core::to_seconds(left) * in.profile->memory_slices;
      }
    }
    const double slices = std::max(compute / hw::kMigComputeSlices, memory / hw::kMigMemorySlices);
    return {std::max(bound, s.now + static_cast<Nanos>(slices / gain_ * 1e9)), sum};
  }

  // Whether no schedule from `s` can beat the best: one that ends later, or as late with no
  // smaller sum of ends.
  bool cut(const State& s) const {
    if (stopped_) return true;
    if (!best_) return false;
    const Best least = lower_bound(s);
    return least.makespan > best_->makespan ||
           (least.makespan >= best_->makespan && least.sum >= best_->sum);
  }

  bool improves(const Best& done) const {
    return !best_ || std::tie(done.makespan, done.sum) < std::tie(best_->makespan, best_->sum);
  }

  // Which idle instances to destroy (any of them; the driver destroys before it makes), then
  // each queued job in turn.
  void destroy_then_decide(const State& s) {
    std::vector<std::size_t> idle;
    for (std::size_t i = 0; i < s.instances.size(); ++i) {
      if (s.instances[i].runs.empty()) idle.push_back(i);
    }
    for (std::uint32_t chosen = 0; chosen < (std::uint32_t{1} << idle.size()); ++chosen) {
      State next = s;
      const std::size_t marked = trail_.size();
      for (std::size_t k = idle.size(); k-- > 0;) {  // from the last: the indices left hold
        if (!(chosen >> k & 1)) continue;
        const Placement p = s.instances[idle[k]].placement;
        next.layout = *space_.after_destroy(next.layout, p);
        next.instances.erase(next.instances.begin() + static_cast<std::ptrdiff_t>(idle[k]));
        next.driver_free = std::max(next.now, next.driver_free) + costs_.destroy_time;
        next.destroys = true;
        trail_.push_back({.kind = SearchStep::Kind::kDestroy,
                          .round = s.round,
                          .at = s.now,
                          .placement = p,
                          .job = 0,
                          .beside = std::nullopt});
      }
      decide(next, 0);
      trail_.resize(marked);
    }
  }

  // Queued job j onward at s.now: each starts on an instance or waits.
  void decide(const State& s, std::size_t j) {
    if (j == jobs_.size()) {
      const bool runs =
          std::ranges::any_of(s.instances, [](const Instance& in) { return !in.runs.empty(); });
      if (s.destroys && !s.makes) return;     // a destroy is carried out only with a create
      if (runs || s.queued == 0) advance(s);  // with nothing running, waiting never ends
      return;
    }
    if (!(s.queued >> j & 1)) return decide(s, j + 1);
    if (cut(s)) return;
    State base = s;
    base.queued &= ~(std::uint32_t{1} << j);
    const SearchJob& job = jobs_[j];
    const auto step = [&](const State& next, SearchStep::Kind kind, Placement placement,
                          std::optional<std::size_t> beside) {
      trail_.push_back({.kind = kind,
                        .round = s.round,
                        .at = s.now,
                        .placement = placement,
                        .job = j,
                        .beside = beside});
      decide(next, j + 1);
      trail_.pop_back();
    };
    for (std::size_t i = 0; i < s.instances.size(); ++i) {
      const Instance& in = s.instances[i];
      const auto t = job.times.find(in.placement.profile_id);
      if (t == job.times.end()) continue;
      if (in.runs.empty()) {
        const Nanos begins = std::max(s.now, in.ready) + costs_.start_time;
        State next = base;
        next.instances[i].runs.push_back(
            {{.work_class = job.work_class,
              .need_bytes = job.need_bytes,
              .term = {.begins = begins, .work = t->second, .slowdown = 1}},
             j});
        step(next, SearchStep::Kind::kStart, in.placement, std::nullopt);
      } else if (in.runs.size() == 1 && co_runs_ != nullptr) {
        const Running& partner = in.runs[0];
        if (partner.run.need_bytes + job.need_bytes > in.profile->memory_bytes) continue;
        const auto s_pair =
            slowdowns(*co_runs_, partner.run.work_class, job.work_class, in.placement.profile_id);
        if (!s_pair) continue;
        State next = base;
        // The partner ran alone until now; from now it is slowed once this job's work begins.
        const auto [partner_term, joiner_term] =
            join(partner.run.term, s.now, costs_.start_time, t->second, *s_pair);
        next.instances[i].runs[0].run.term = partner_term;
        next.instances[i].runs.push_back(
            {{.work_class = job.work_class, .need_bytes = job.need_bytes, .term = joiner_term}, j});
        step(next, SearchStep::Kind::kJoin, in.placement, partner.job);
      }
    }
    // A new instance where the layout has room for it.
    for (const auto& [id, t] : job.times) {
      const hw::MigProfile* profile = space_.geometry().find(id);
      for (const int start : profile->placement_starts) {
        const Placement placement{.profile_id = id, .start = start};
        const auto layout = space_.after_create(s.layout, placement);
        if (!layout) continue;
        State next = base;
        next.layout = *layout;
        const Nanos ready = std::max(s.now, s.driver_free) + costs_.create_time;
        next.driver_free = ready;
        next.makes = true;
        next.instances.push_back(
            {.placement = placement,
             .profile = profile,
             .ready = ready,
             .runs = {{{.work_class = job.work_class,
                        .need_bytes = job.need_bytes,
                        .term = {.begins = ready + costs_.start_time, .work = t, .slowdown = 1}},
                       j}}});
        step(next, SearchStep::Kind::kMake, placement, std::nullopt);
      }
    }
    decide(s, j + 1);  // it waits
  }

  // To the next job's end, which frees its place: a pair's survivor runs on alone.
  void advance(State s) {
    if (++steps_ > limits_.max_steps) stopped_ = true;
    if (s.queued == 0) {
      Best done{.makespan = s.now, .sum = s.ended};
      for (const Instance& in : s.instances) {
        for (std::size_t k = 0; k < in.runs.size(); ++k) {
          done.makespan = std::max(done.makespan, end_of(in, k));
          done.sum += end_of(in, k);
        }
      }
      if (improves(done)) {
        best_ = done;
        best_schedule_ = trail_;
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
      Running left = in.runs[1 - first->second];
      left.run.term = survivor(left.run.term, in.runs[first->second].run.term, at);
      in.runs = {left};
    } else {
      in.runs.clear();
    }
    s.now = at;
    s.ended += at;
    ++s.round;
    s.destroys = false;
    s.makes = false;
    destroy_then_decide(s);
  }

  const LayoutSpace& space_;
  const std::vector<SearchJob>& jobs_;
  const CoRunTable* co_runs_;
  SearchCosts costs_;
  SearchLimits limits_;
  double gain_ = 1;  // the most work per second any pair does on its slices, or 1 alone
  std::vector<double> compute_area_;  // each queued job's least compute slice-seconds
  std::vector<double> memory_area_;
  std::vector<Nanos> fastest_;
  std::optional<Best> best_;
  std::vector<SearchStep> best_schedule_;
  std::vector<SearchStep> trail_;
  std::int64_t steps_ = 0;
  bool stopped_ = false;
};

}  // namespace

SearchResult search_schedules(const LayoutSpace& space, const std::vector<SearchJob>& queued,
                              const SearchFrom& from, const CoRunTable* co_runs,
                              int jobs_per_instance, const SearchCosts& costs,
                              const SearchLimits& limits) {
  constexpr std::size_t kMaxJobs = 31;  // the queue is a bit mask
  if (queued.empty() || queued.size() > kMaxJobs) return {};
  // A job no profile holds never starts, so no schedule ends.
  if (std::ranges::any_of(queued, [](const SearchJob& j) { return j.times.empty(); })) return {};
  return Search(space, queued, co_runs, jobs_per_instance, costs, limits).run(from);
}

}  // namespace tessera::mig
