#include "tessera/mig/policy/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "tessera/mig/policy/time_fit.hpp"

namespace tessera::mig {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

bool smaller_profile(const hw::MigProfile* a, const hw::MigProfile* b) {
  return std::tie(a->memory_slices, a->compute_slices, a->id) <
         std::tie(b->memory_slices, b->compute_slices, b->id);
}

// Position of `profile_id` in profile_order, or -1.
int rank_of(const std::vector<const hw::MigProfile*>& order, int profile_id) {
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i]->id == profile_id) return static_cast<int>(i);
  }
  return -1;
}

// The queue as every scheme first sees it: restarted jobs first (they waited already), then by
// submission, then by index.
std::vector<QueuedJob> fcfs_order(std::vector<QueuedJob> queue) {
  std::ranges::stable_sort(queue, [](const QueuedJob& a, const QueuedJob& b) {
    return std::make_tuple(!a.restart, a.submitted, a.job) <
           std::make_tuple(!b.restart, b.submitted, b.job);
  });
  return queue;
}

// Carries the scheduler's own view forward as decisions accumulate.
class Pass {
 public:
  explicit Pass(const SchedulerInput& in) : in_(in), current_(in.current), busy_(in.busy) {}

  // Plans an instance of `profile_id` and records the start; false when no plan exists now.
  bool try_start(const QueuedJob& q, int profile_id) {
    auto plan = plan_instance(*in_.space, current_, busy_, profile_id);
    if (!plan) return false;
    start(q, *plan);
    return true;
  }

  void start(const QueuedJob& q, const ReconfigPlan& plan) {
    current_ = plan.result;
    busy_.insert(plan.instance);
    out_.starts.push_back({q.job, plan});
  }

  void give_up(const QueuedJob& q, std::string reason) {
    out_.give_ups.push_back({q.job, std::move(reason)});
  }

  StateId current() const { return current_; }
  const std::set<Placement>& busy() const { return busy_; }
  Decisions take() { return std::move(out_); }

 private:
  const SchedulerInput& in_;
  StateId current_;
  std::set<Placement> busy_;
  Decisions out_;
};

// Scheme B: strict FCFS. The head gets its profile or nothing behind it starts (no backfill).
Decisions schedule_b(const SchedulerInput& in) {
  Pass pass(in);
  for (const QueuedJob& q : fcfs_order(in.queue)) {
    const hw::MigProfile* p = profile_for(*in.space, q.need_bytes, q.min_profile_id);
    if (p == nullptr) {
      pass.give_up(q, give_up_reason(*in.space, q));
      continue;
    }
    if (!pass.try_start(q, p->id)) break;
  }
  return pass.take();
}

// Scheme A: restarted jobs first, as in B; then the rest by need ascending (stable by
// submission), in groups of equal profile. The current group is the smallest profile that still
// has a queued job; its jobs start while plans exist, and the next group starts only once the
// current one has no job left queued.
Decisions schedule_a(const SchedulerInput& in) {
  Pass pass(in);
  std::vector<std::pair<const hw::MigProfile*, QueuedJob>> fresh;
  bool blocked = false;
  for (const QueuedJob& q : fcfs_order(in.queue)) {
    const hw::MigProfile* p = profile_for(*in.space, q.need_bytes, q.min_profile_id);
    if (p == nullptr) {
      pass.give_up(q, give_up_reason(*in.space, q));
    } else if (q.restart) {
      if (!blocked && !pass.try_start(q, p->id)) blocked = true;
    } else {
      fresh.emplace_back(p, q);
    }
  }
  if (blocked) return pass.take();
  std::ranges::stable_sort(fresh, [](const auto& a, const auto& b) {
    if (a.first != b.first) return smaller_profile(a.first, b.first);
    return std::make_tuple(a.second.need_bytes, a.second.submitted, a.second.job) <
           std::make_tuple(b.second.need_bytes, b.second.submitted, b.second.job);
  });
  for (const auto& [profile, q] : fresh) {
    if (!pass.try_start(q, profile->id)) break;
  }
  return pass.take();
}

// Sequential: one job at a time on the largest profile, FCFS.
Decisions schedule_sequential(const SchedulerInput& in) {
  Pass pass(in);
  const auto order = profile_order(*in.space);
  if (order.empty()) return pass.take();
  const hw::MigProfile* largest = order.back();
  for (const QueuedJob& q : fcfs_order(in.queue)) {
    if (q.need_bytes > largest->memory_bytes) {
      pass.give_up(q, give_up_reason(*in.space, q));
      continue;
    }
    if (pass.busy().empty()) pass.try_start(q, largest->id);
    break;
  }
  return pass.take();
}

// Static: the layout never changes; each job, FCFS with backfill, takes the smallest free
// instance of the layout with enough memory (and not smaller than its minimum profile).
Decisions schedule_static(const SchedulerInput& in) {
  Pass pass(in);
  const LayoutSpace& space = *in.space;
  const hw::MigGeometry& g = space.geometry();
  const auto order = profile_order(space);
  std::vector<Placement> slots = in.static_layout.instances;
  std::ranges::stable_sort(slots, [&](const Placement& a, const Placement& b) {
    return std::make_pair(rank_of(order, a.profile_id), a.start) <
           std::make_pair(rank_of(order, b.profile_id), b.start);
  });
  for (const QueuedJob& q : fcfs_order(in.queue)) {
    const int min_rank = q.min_profile_id ? rank_of(order, *q.min_profile_id) : 0;
    const Placement* largest = nullptr;
    const Placement* chosen = nullptr;
    bool any_fits = false;
    for (const Placement& slot : slots) {
      const hw::MigProfile* p = g.find(slot.profile_id);
      if (p == nullptr) continue;
      largest = &slot;
      if (p->memory_bytes < q.need_bytes || rank_of(order, slot.profile_id) < min_rank) continue;
      any_fits = true;
      if (chosen == nullptr && !pass.busy().contains(slot)) chosen = &slot;
    }
    if (!any_fits) {
      const hw::MigProfile* lp = largest ? g.find(largest->profile_id) : nullptr;
      pass.give_up(
          q, lp == nullptr ? fmt::format("the static layout {} has no instance",
                                         describe(g, in.static_layout))
             : q.need_bytes > lp->memory_bytes
                 ? fmt::format("needs {}; the largest instance of the static layout {}, {}, has {}",
                               format_gib(q.need_bytes), describe(g, in.static_layout), lp->name,
                               format_gib(lp->memory_bytes))
                 : fmt::format("needs an instance larger than its last one; the largest of the "
                               "static layout {} is {}",
                               describe(g, in.static_layout), lp->name));
      continue;
    }
    if (chosen == nullptr) continue;  // backfill: a later job may fit a free instance
    const Layout& now = space.layout(pass.current());
    ReconfigPlan plan;
    plan.instance = *chosen;
    if (std::ranges::find(now.instances, *chosen) != now.instances.end()) {
      plan.kind = PlanKind::kReuse;
      plan.result = pass.current();
    } else {
      // Not there (lost to a device failure): created again in its slot when that is free.
      auto next = space.after_create(pass.current(), *chosen);
      if (!next) continue;
      plan.kind = PlanKind::kPlace;
      plan.result = *next;
    }
    plan.fcr = space.fcr(plan.result);
    pass.start(q, plan);
  }
  return pass.take();
}

}  // namespace

std::vector<const hw::MigProfile*> profile_order(const LayoutSpace& space) {
  const hw::MigGeometry& g = space.geometry();
  std::vector<const hw::MigProfile*> out;
  if (space.profile_ids().empty()) {
    for (const hw::MigProfile& p : g.profiles) {
      if (!p.media_extensions) out.push_back(&p);
    }
  } else {
    for (int id : space.profile_ids()) {
      if (const hw::MigProfile* p = g.find(id)) out.push_back(p);
    }
  }
  std::ranges::sort(out, smaller_profile);
  return out;
}

const hw::MigProfile* next_larger_profile(const LayoutSpace& space, int profile_id) {
  const hw::MigProfile* from = space.geometry().find(profile_id);
  if (from == nullptr) return nullptr;
  for (const hw::MigProfile* p : profile_order(space)) {
    if (p->memory_bytes > from->memory_bytes) return p;
  }
  return nullptr;
}

const hw::MigProfile* profile_for(const LayoutSpace& space, std::int64_t need_bytes,
                                  std::optional<int> min_profile_id) {
  const auto order = profile_order(space);
  std::size_t first = 0;
  if (min_profile_id) {
    const int r = rank_of(order, *min_profile_id);
    if (r < 0) return nullptr;
    first = static_cast<std::size_t>(r);
  }
  for (std::size_t i = first; i < order.size(); ++i) {
    if (order[i]->memory_bytes >= need_bytes) return order[i];
  }
  return nullptr;
}

std::string give_up_reason(const LayoutSpace& space, const QueuedJob& q) {
  const auto order = profile_order(space);
  if (order.empty()) return "the layout space has no profile to give";
  const hw::MigProfile* largest = order.back();
  if (q.need_bytes > largest->memory_bytes) {
    return fmt::format("needs {}; the largest instance, {}, has {}", format_gib(q.need_bytes),
                       largest->name, format_gib(largest->memory_bytes));
  }
  return fmt::format("needs a profile at least as large as profile {}, which the space lacks",
                     q.min_profile_id.value_or(-1));
}

std::string format_gib(std::int64_t bytes) {
  if (bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

Decisions schedule(const SchedulerInput& in) {
  if (in.space == nullptr) return {};
  switch (in.scheme) {
    case Scheme::kA: return schedule_a(in);
    case Scheme::kB: return schedule_b(in);
    case Scheme::kSequential: return schedule_sequential(in);
    case Scheme::kStatic: return schedule_static(in);
    case Scheme::kTimeFit: return schedule_time_fit(in);
  }
  return {};
}

}  // namespace tessera::mig
