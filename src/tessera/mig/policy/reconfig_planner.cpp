#include "tessera/mig/policy/reconfig_planner.hpp"

#include <algorithm>
#include <bit>
#include <tuple>

namespace tessera::mig {

namespace {

unsigned memory_mask(const hw::MigGeometry& g, const Placement& p) {
  const hw::MigProfile* profile = g.find(p.profile_id);
  if (profile == nullptr) return 0;
  return ((1u << profile->memory_slices) - 1u) << p.start;
}

int memory_slices(const hw::MigGeometry& g, int profile_id) {
  const hw::MigProfile* profile = g.find(profile_id);
  return profile ? profile->memory_slices : 0;
}

}  // namespace

std::string_view to_string(PlanKind k) {
  switch (k) {
    case PlanKind::kReuse: return "reuse";
    case PlanKind::kPlace: return "place";
    case PlanKind::kFusion: return "fusion";
    case PlanKind::kFission: return "fission";
    case PlanKind::kRebuild: return "rebuild";
    case PlanKind::kShare: return "share";
  }
  return "?";
}

PlanKind plan_kind(const hw::MigGeometry& g, const std::vector<Placement>& destroy,
                   int profile_id) {
  if (destroy.empty()) return PlanKind::kPlace;
  const int size = memory_slices(g, profile_id);
  if (std::ranges::all_of(
          destroy, [&](const Placement& d) { return memory_slices(g, d.profile_id) < size; })) {
    return PlanKind::kFusion;
  }
  if (destroy.size() == 1 && memory_slices(g, destroy[0].profile_id) > size) {
    return PlanKind::kFission;
  }
  return PlanKind::kRebuild;
}

std::optional<ReconfigPlan> plan_instance(const LayoutSpace& space, StateId current,
                                          const std::set<Placement>& busy, int profile_id) {
  const hw::MigGeometry& g = space.geometry();
  const hw::MigProfile* profile = g.find(profile_id);
  if (profile == nullptr ||
      std::ranges::find(space.profile_ids(), profile_id) == space.profile_ids().end()) {
    return std::nullopt;
  }
  const Layout& layout = space.layout(current);

  // Reuse: instances ascend by start, so the last idle match has the highest start.
  std::optional<Placement> reuse;
  for (const Placement& p : layout.instances) {
    if (p.profile_id == profile_id && !busy.contains(p)) reuse = p;
  }
  if (reuse) {
    return ReconfigPlan{.kind = PlanKind::kReuse,
                        .destroy = {},
                        .instance = *reuse,
                        .result = current,
                        .fcr = space.fcr(current)};
  }

  std::vector<Placement> idle;
  unsigned busy_memory = 0;
  for (const Placement& p : layout.instances) {
    if (busy.contains(p)) {
      busy_memory |= memory_mask(g, p);
    } else {
      idle.push_back(p);
    }
  }

  // Every start clear of busy instances, with every set of idle instances destroyed that holds
  // the ones in the way; the best by (fewest destroyed, highest fcr, highest start).
  std::optional<ReconfigPlan> best;
  std::size_t best_count = 0;
  for (int start : profile->placement_starts) {
    const Placement instance{profile_id, start};
    const unsigned mask = memory_mask(g, instance);
    if ((mask & busy_memory) != 0) continue;
    unsigned in_the_way = 0;
    for (std::size_t i = 0; i < idle.size(); ++i) {
      if ((memory_mask(g, idle[i]) & mask) != 0) in_the_way |= 1u << i;
    }
    for (unsigned subset = 0; subset < (1u << idle.size()); ++subset) {
      if ((subset & in_the_way) != in_the_way) continue;
      const auto count = static_cast<std::size_t>(std::popcount(subset));
      if (best && count > best_count) continue;
      Layout next;
      std::vector<Placement> destroy;
      for (const Placement& p : layout.instances) {
        const auto it = std::ranges::find(idle, p);
        const bool destroyed =
            it != idle.end() && ((subset >> static_cast<unsigned>(it - idle.begin())) & 1u) != 0;
        if (destroyed) {
          destroy.push_back(p);
        } else {
          next.instances.push_back(p);
        }
      }
      next.instances.push_back(instance);
      const auto result = space.find(next);
      if (!result) continue;
      const std::int64_t score = space.fcr(*result);
      if (best && std::tuple(count, -score, -start) >=
                      std::tuple(best_count, -best->fcr, -best->instance.start)) {
        continue;
      }
      std::ranges::sort(destroy);
      best = ReconfigPlan{.kind = plan_kind(g, destroy, profile_id),
                          .destroy = std::move(destroy),
                          .instance = instance,
                          .result = *result,
                          .fcr = score};
      best_count = count;
    }
  }
  return best;
}

}  // namespace tessera::mig
