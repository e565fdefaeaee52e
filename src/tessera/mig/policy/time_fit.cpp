#include "tessera/mig/policy/time_fit.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <utility>

#include "tessera/mig/policy/reconfig_planner.hpp"

namespace tessera::mig {
namespace {

// A queued job as the list schedule sees it.
struct Job {
  const QueuedJob* queued = nullptr;
  bool first = false;  // restarted or waited past the ageing bound: scheduled before the rest
  std::vector<std::pair<const hw::MigProfile*, core::Nanos>> times;  // every profile it may get
  // The keys of the list orders tried (kOrders), each largest first: least area (time x
  // compute slices), least time, most time, and least time negated (shortest first, which brings
  // the mean turnaround down where the makespan is the same).
  std::array<core::Nanos, 4> keys{};
};
constexpr std::size_t kOrders = 4;

// The job a queued job may join on an instance: the instance's last job while it runs alone, or
// of a pair, the one that ends last, from when the other ends.
struct Partner {
  std::size_t work_class = 0;
  std::int64_t need_bytes = 0;
  ShareTerm term;  // its work alone and when it begins
  core::Nanos end = 0;
  // A job joining it: when its work begins, and whether it starts now (the partner runs now, or
  // is the instance's first job, which starts now).
  core::Nanos join_begins = 0;
  bool now = false;
};

// Of two jobs sharing an instance, ending at `end_a` and `end_b`: the one that ends last, as a
// partner from when the other ends (a job joining it then starts its process then).
Partner last_of_pair(std::size_t class_a, std::int64_t need_a, core::Nanos end_a,
                     std::size_t class_b, std::int64_t need_b, core::Nanos end_b,
                     core::Nanos start_time) {
  const bool a_last = end_a >= end_b;
  const core::Nanos first_end = std::min(end_a, end_b);
  const core::Nanos last_end = std::max(end_a, end_b);
  return Partner{.work_class = a_last ? class_a : class_b,
                 .need_bytes = a_last ? need_a : need_b,
                 .term = {.begins = first_end, .work = last_end - first_end, .slowdown = 1},
                 .end = last_end,
                 .join_begins = first_end + start_time,
                 .now = false};
}

// One instance of a candidate layout.
struct Slot {
  enum class Kind { kBusy, kIdle, kNew };
  Placement placement;
  Kind kind = Kind::kNew;
  core::Nanos free_at = 0;
  std::optional<std::size_t> first_job;  // the first job list-scheduled on it (index into jobs)
  // A new instance is made when the list first needs it: the made ones in the order made.
  std::optional<std::size_t> made;
};

// What sharing adds to a slot (kept apart, so that a schedule without sharing copies none of it).
struct SlotShare {
  const hw::MigProfile* profile = nullptr;
  std::optional<Partner> partner;
  std::optional<std::size_t> joins_now;  // a job that starts now beside its partner
};

// The queue list-scheduled on one fully configured layout.
struct Outcome {
  StateId target = 0;
  std::vector<Slot> slots;         // the layout's instances, ascending by start
  std::vector<SlotShare> shares;   // per slot, with two jobs to an instance; empty without
  std::vector<Placement> destroy;  // idle instances outside the layout
  bool first_unplaced = false;     // a job scheduled first fits none of the layout's instances
  std::size_t unplaced = 0;        // jobs that fit none
  core::Nanos makespan = 0;        // when the last job (or busy instance) is predicted to end
  core::Nanos finish_sum = 0;      // of the jobs' predicted ends
  std::size_t changes = 0;         // instances destroyed and created for the starts due now
  std::int64_t fcr = 0;            // of the state the starts due now leave
  bool rules_differ = false;       // the other JoinRule would have placed some job elsewhere
};

// The job's time on `p`: predicted, or scaled from a predicted one by compute slices (a job with
// no prediction at all counts one second on the 7-slice profile).
core::Nanos time_on(const QueuedJob& q, const hw::MigProfile& p, const hw::MigGeometry& g) {
  for (const ProfileTime& t : q.times) {
    if (t.profile_id == p.id) return t.time;
  }
  for (const ProfileTime& t : q.times) {
    if (const hw::MigProfile* known = g.find(t.profile_id)) {
      return t.time * known->compute_slices / p.compute_slices;
    }
  }
  return core::seconds(1) * hw::kMigComputeSlices / p.compute_slices;
}

// Whether an instance may run two jobs: two to an instance, and the pairs' slowdowns known.
bool shares(const SchedulerInput& in) {
  return in.jobs_per_instance >= 2 && in.co_runs != nullptr;
}

// The jobs to schedule. Jobs no profile fits are given up.
std::vector<Job> queued_jobs(const SchedulerInput& in, Decisions& out) {
  const LayoutSpace& space = *in.space;
  const auto order = profile_order(space);
  std::vector<Job> jobs;
  for (const QueuedJob& q : in.queue) {
    if (profile_for(space, q.need_bytes, q.min_profile_id) == nullptr) {
      out.give_ups.push_back({q.job, give_up_reason(space, q)});
      continue;
    }
    Job j{.queued = &q,
          .first = q.restart || in.now - q.submitted >= in.time_fit.ageing,
          .times = {},
          .keys = {core::kNever, core::kNever, 0, 0}};
    bool reached_minimum = !q.min_profile_id.has_value();
    for (const hw::MigProfile* p : order) {
      reached_minimum = reached_minimum || p->id == *q.min_profile_id;
      if (!reached_minimum || p->memory_bytes < q.need_bytes) continue;
      const core::Nanos t = time_on(q, *p, space.geometry());
      j.times.emplace_back(p, t);
      j.keys[0] = std::min(j.keys[0], t * p->compute_slices);
      j.keys[1] = std::min(j.keys[1], t);
      j.keys[2] = std::max(j.keys[2], t);
    }
    j.keys[3] = -j.keys[1];
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// List order `k`: restarted and aged jobs oldest first, then the rest by key k, largest first.
std::vector<Job> list_order(std::vector<Job> jobs, std::size_t k) {
  std::ranges::stable_sort(jobs, [k](const Job& a, const Job& b) {
    if (a.first != b.first) return a.first;
    const QueuedJob& qa = *a.queued;
    const QueuedJob& qb = *b.queued;
    if (a.first) return std::tie(qa.submitted, qa.job) < std::tie(qb.submitted, qb.job);
    return std::make_tuple(-a.keys[k], qa.submitted, qa.job) <
           std::make_tuple(-b.keys[k], qb.submitted, qb.job);
  });
  return jobs;
}

// With sharing, one more order: the longest job left, then the shortest, then the next longest,
// and so on (restarted and aged jobs first, as in every order). Short jobs then come up while a
// long one runs and can join it, as on a machine with two slots.
constexpr std::size_t kLeastTime = 1;  // the key of each job's time on its fastest profile
std::vector<Job> long_short_order(const std::vector<Job>& queued) {
  const std::vector<Job> by_time = list_order(queued, kLeastTime);
  std::vector<Job> out;
  out.reserve(by_time.size());
  std::size_t lo = 0;
  while (lo < by_time.size() && by_time[lo].first) out.push_back(by_time[lo++]);
  std::size_t hi = by_time.size();
  for (bool longest = true; lo < hi; longest = !longest) {
    out.push_back(longest ? by_time[lo++] : by_time[--hi]);
  }
  return out;
}

std::optional<core::Nanos> time_of(const Job& j, int profile_id) {
  for (const auto& [p, t] : j.times) {
    if (p->id == profile_id) return t;
  }
  return std::nullopt;
}

// The state after the starts due now: the destroys, then each new instance that gets a job.
std::optional<StateId> state_after(const LayoutSpace& space, StateId current, const Outcome& o) {
  StateId s = current;
  bool creates = false;
  for (const Slot& slot : o.slots) creates = creates || slot.made.has_value();
  if (!creates) return s;
  for (const Placement& d : o.destroy) {
    const auto next = space.after_destroy(s, d);
    if (!next) return std::nullopt;
    s = *next;
  }
  for (const Slot& slot : o.slots) {
    if (!slot.made) continue;
    const auto next = space.after_create(s, slot.placement);
    if (!next) return std::nullopt;
    s = *next;
  }
  return s;
}

// The queue list-scheduled on `target`; nullopt when the layout lacks a busy instance.
// When a job joins an instance's last job rather than run alone where it ends first: when its
// end plus the delay it causes the other beats its end alone (a join that costs the queue nothing
// overall), or when its own end does (greedy, as each job takes the slot where it ends first).
// Each list order on each layout is scheduled under both rules and the better outcome kept.
enum class JoinRule { kCountTheDelay, kOwnEnd };
constexpr std::array<JoinRule, 2> kJoinRules{JoinRule::kCountTheDelay, JoinRule::kOwnEnd};

std::optional<Outcome> list_schedule(const SchedulerInput& in, const std::vector<Job>& jobs,
                                     StateId target, JoinRule rule) {
  const LayoutSpace& space = *in.space;
  const Layout& want = space.layout(target);
  const Layout& now = space.layout(in.current);
  for (const Placement& b : in.busy) {
    if (std::ranges::find(want.instances, b) == want.instances.end()) return std::nullopt;
  }
  Outcome o;
  o.target = target;
  for (const Placement& p : now.instances) {
    if (!in.busy.contains(p) && std::ranges::find(want.instances, p) == want.instances.end()) {
      o.destroy.push_back(p);
    }
  }
  const TimeFitOptions& cost = in.time_fit;
  // The driver makes instances one at a time, after the destroys: the next one made is ready
  // at `reconfigured` plus a create.
  core::Nanos reconfigured = std::max(in.now, in.reconfig_free_at) +
                             static_cast<core::Nanos>(o.destroy.size()) * cost.destroy_time;
  std::size_t made = 0;
  const bool sharing = shares(in);
  o.slots.reserve(want.instances.size());
  if (sharing) o.shares.resize(want.instances.size());
  for (const Placement& p : want.instances) {
    Slot slot{
        .placement = p, .kind = Slot::Kind::kNew, .free_at = in.now, .first_job = {}, .made = {}};
    if (std::ranges::find(now.instances, p) != now.instances.end()) {
      slot.kind = in.busy.contains(p) ? Slot::Kind::kBusy : Slot::Kind::kIdle;
      if (auto it = in.free_at.find(p); it != in.free_at.end()) {
        slot.free_at = std::max(in.now, it->second);
      }
      o.makespan = std::max(o.makespan, slot.free_at);
    }
    if (sharing) {
      SlotShare& share = o.shares[o.slots.size()];
      share.profile = space.geometry().find(p.profile_id);
      const auto running = in.running.find(p);
      if (slot.kind == Slot::Kind::kBusy && running != in.running.end()) {
        const std::vector<RunningJob>& on = running->second;
        if (on.size() == 1) {
          share.partner = Partner{.work_class = on[0].work_class,
                                  .need_bytes = on[0].need_bytes,
                                  .term = on[0].term,
                                  .end = on[0].term.begins + on[0].term.work,
                                  .join_begins = in.now + cost.start_time,
                                  .now = true};
        } else if (on.size() == 2) {
          const auto ends = shared_ends(on[0].term, on[1].term);
          share.partner =
              last_of_pair(on[0].work_class, on[0].need_bytes, ends.first, on[1].work_class,
                           on[1].need_bytes, ends.second, cost.start_time);
        }
      }
    }
    o.slots.push_back(slot);
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    Slot* best = nullptr;
    core::Nanos best_end = 0;
    for (Slot& slot : o.slots) {
      const auto t = time_of(jobs[j], slot.placement.profile_id);
      if (!t) continue;
      const bool unmade = slot.kind == Slot::Kind::kNew && !slot.made;
      const core::Nanos ready = unmade ? reconfigured + cost.create_time : slot.free_at;
      const core::Nanos end = ready + cost.start_time + *t;
      // Ties go to the smaller instance (the times list is smallest first), then the lower start.
      if (best == nullptr || end < best_end) {
        best = &slot;
        best_end = end;
      }
    }
    // Joining an instance's last job instead, by `rule` (JoinRule). The other rule's choice is
    // found too: until the two differ, the other rule's schedule is this one.
    std::optional<std::size_t> join, other_join;  // indices into the slots
    core::Nanos join_score = 0, other_score = 0;
    std::pair<core::Nanos, core::Nanos> join_ends;  // the partner's, the job's
    for (std::size_t i = 0; i < o.shares.size(); ++i) {
      const SlotShare& share = o.shares[i];
      if (!share.partner) continue;
      const Partner& k = *share.partner;
      const int profile_id = o.slots[i].placement.profile_id;
      const auto t = time_of(jobs[j], profile_id);
      if (!t || k.need_bytes + jobs[j].queued->need_bytes > share.profile->memory_bytes) continue;
      const auto s = slowdowns(*in.co_runs, k.work_class, jobs[j].queued->work_class, profile_id);
      if (!s) continue;
      const auto ends =
          shared_ends(ShareTerm{.begins = k.term.begins, .work = k.term.work, .slowdown = s->first},
                      ShareTerm{.begins = k.join_begins, .work = *t, .slowdown = s->second});
      const core::Nanos with_delay = ends.second + (ends.first - k.end);
      const core::Nanos score = rule == JoinRule::kCountTheDelay ? with_delay : ends.second;
      const core::Nanos other = rule == JoinRule::kCountTheDelay ? ends.second : with_delay;
      if (!join || score < join_score) {
        join = i;
        join_score = score;
        join_ends = ends;
      }
      if (!other_join || other < other_score) {
        other_join = i;
        other_score = other;
      }
    }
    const auto joins = [&](const std::optional<std::size_t>& slot, core::Nanos score) {
      return slot && (best == nullptr || score < best_end) ? slot : std::nullopt;
    };
    o.rules_differ = o.rules_differ || joins(join, join_score) != joins(other_join, other_score);
    if (join && (best == nullptr || join_score < best_end)) {
      SlotShare& share = o.shares[*join];
      Slot& slot = o.slots[*join];
      const Partner& k = *share.partner;
      if (k.now) share.joins_now = j;
      o.finish_sum += join_ends.second + (join_ends.first - k.end);
      slot.free_at = std::max(join_ends.first, join_ends.second);
      o.makespan = std::max(o.makespan, slot.free_at);
      share.partner =
          last_of_pair(k.work_class, k.need_bytes, join_ends.first, jobs[j].queued->work_class,
                       jobs[j].queued->need_bytes, join_ends.second, cost.start_time);
      continue;
    }
    if (best == nullptr) {
      ++o.unplaced;
      o.first_unplaced = o.first_unplaced || jobs[j].first;
      continue;
    }
    if (best->kind == Slot::Kind::kNew && !best->made) {
      best->made = made++;
      reconfigured += cost.create_time;
    }
    if (sharing) {
      // It starts now when it is the first job of an instance that runs nothing.
      const core::Nanos work = *time_of(jobs[j], best->placement.profile_id);
      const core::Nanos begins = best_end - work;
      o.shares[static_cast<std::size_t>(best - o.slots.data())].partner =
          Partner{.work_class = jobs[j].queued->work_class,
                  .need_bytes = jobs[j].queued->need_bytes,
                  .term = {.begins = begins, .work = work, .slowdown = 1},
                  .end = best_end,
                  .join_begins = begins,
                  .now = !best->first_job && best->kind != Slot::Kind::kBusy};
    }
    if (!best->first_job) best->first_job = j;
    best->free_at = best_end;
    o.makespan = std::max(o.makespan, best_end);
    o.finish_sum += best_end;
  }
  if (made > 0) o.changes = made + o.destroy.size();
  const auto after = state_after(space, in.current, o);
  if (!after) return std::nullopt;
  o.fcr = space.fcr(*after);
  return o;
}

// Finishing the queue first wins, makespans within 1% of the time left counting as equal; then
// the lowest sum of finish times, the fewest instances changed, the highest fcr, the lowest id.
bool better(const Outcome& a, const Outcome& b, core::Nanos now) {
  if (a.first_unplaced != b.first_unplaced) return !a.first_unplaced;
  if (a.unplaced != b.unplaced) return a.unplaced < b.unplaced;
  const core::Nanos left = std::max<core::Nanos>(1, std::min(a.makespan, b.makespan) - now);
  const core::Nanos apart =
      a.makespan > b.makespan ? a.makespan - b.makespan : b.makespan - a.makespan;
  if (apart * 100 > left) return a.makespan < b.makespan;
  return std::make_tuple(a.finish_sum, a.changes, -a.fcr, a.target) <
         std::make_tuple(b.finish_sum, b.changes, -b.fcr, b.target);
}

}  // namespace

Decisions schedule_time_fit(const SchedulerInput& in) {
  Decisions out;
  const LayoutSpace& space = *in.space;
  const std::vector<Job> queued = queued_jobs(in, out);
  if (queued.empty()) return out;

  // Every list order on every layout; ties keep the first order, then the first layout.
  std::optional<Outcome> best;
  std::vector<Job> jobs;
  const bool sharing = shares(in);
  for (std::size_t k = 0; k < kOrders + (sharing ? 1 : 0); ++k) {
    std::vector<Job> list = k < kOrders ? list_order(queued, k) : long_short_order(queued);
    bool improved = false;
    for (const StateId target : space.full_states()) {
      for (const JoinRule rule : kJoinRules) {
        auto o = list_schedule(in, list, target, rule);
        // Where the rules never differ (no join was open, or both chose alike), the second
        // schedule would be the first.
        const bool differ = o && o->rules_differ;
        if (o && (!best || better(*o, *best, in.now))) {
          best = std::move(o);
          improved = true;
        }
        if (!differ) break;
      }
    }
    if (improved) jobs = std::move(list);
  }
  // A job served first that fits nowhere beside the busy instances: nothing new starts, so the
  // instances it needs come free.
  if (!best || best->first_unplaced) return out;

  // Reuses first, then the new instances in the order the list made them (the order the
  // manager carries the decisions out, and so the order the driver makes them).
  const auto joins_now = [&](const Slot& slot) -> std::optional<std::size_t> {
    if (best->shares.empty()) return std::nullopt;
    return best->shares[static_cast<std::size_t>(&slot - best->slots.data())].joins_now;
  };
  std::vector<const Slot*> order;
  for (const Slot& slot : best->slots) {
    if ((slot.first_job && slot.kind != Slot::Kind::kBusy) || joins_now(slot)) {
      order.push_back(&slot);
    }
  }
  const auto rank = [](const Slot* s) { return s->made ? *s->made + 1 : 0; };
  std::ranges::stable_sort(order, {}, rank);
  StateId state = in.current;
  bool destroyed = false;
  for (const Slot* s : order) {
    const Slot& slot = *s;
    const auto share = [&] {
      const auto joiner = joins_now(slot);
      if (!joiner) return;
      ReconfigPlan plan;
      plan.kind = PlanKind::kShare;
      plan.instance = slot.placement;
      plan.result = state;
      plan.fcr = space.fcr(state);
      out.starts.push_back({jobs[*joiner].queued->job, std::move(plan)});
    };
    if (slot.kind == Slot::Kind::kBusy) {
      share();
      continue;
    }
    ReconfigPlan plan;
    plan.instance = slot.placement;
    if (slot.kind == Slot::Kind::kIdle) {
      plan.kind = PlanKind::kReuse;
    } else {
      if (!destroyed) {
        plan.destroy = best->destroy;
        for (const Placement& d : plan.destroy) state = *space.after_destroy(state, d);
        destroyed = true;
      }
      plan.kind = plan_kind(space.geometry(), plan.destroy, slot.placement.profile_id);
      state = *space.after_create(state, slot.placement);
    }
    plan.result = state;
    plan.fcr = space.fcr(state);
    out.starts.push_back({jobs[*slot.first_job].queued->job, std::move(plan)});
    share();
  }
  return out;
}

}  // namespace tessera::mig
