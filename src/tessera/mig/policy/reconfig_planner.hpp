#pragma once
// Fusion and fission (MIGM §3.3): getting an instance of a wanted profile on demand, by reusing
// an idle one, placing it in free slices, merging idle neighbours into it (fusion) or splitting a
// larger idle instance (fission). Instances that run a job are never touched.

#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "tessera/mig/policy/layout_space.hpp"

namespace tessera::mig {

enum class PlanKind {
  kReuse,    // an idle instance of the profile exists: no reconfiguration
  kPlace,    // created in free slices, nothing destroyed
  kFusion,   // idle instances destroyed to make room, the new one larger than each of them
  kFission,  // one larger idle instance destroyed, the new one smaller
  kRebuild,  // idle instances destroyed that are neither all smaller nor one larger
  kShare,    // the job joins a job on its instance (time-fit, where instances run two jobs)
};
std::string_view to_string(PlanKind k);

// What destroying `destroy` (idle instances) to create an instance of `profile_id` is: place
// (nothing destroyed), fusion, fission or rebuild.
PlanKind plan_kind(const hw::MigGeometry& g, const std::vector<Placement>& destroy, int profile_id);

struct ReconfigPlan {
  PlanKind kind = PlanKind::kPlace;
  std::vector<Placement> destroy;  // idle instances, destroyed first, ascending
  Placement instance;              // the instance the job gets (reused or created)
  StateId result = 0;              // the state once the plan is carried out
  std::int64_t fcr = 0;            // fcr(result)
};

// The plan for one instance of `profile_id` in state `current`, where `busy` holds the
// placements that run a job. Preference: reuse; then fewest instances destroyed; then highest
// fcr of the result; then highest start. nullopt when no plan exists without touching a busy
// instance.
std::optional<ReconfigPlan> plan_instance(const LayoutSpace& space, StateId current,
                                          const std::set<Placement>& busy, int profile_id);

}  // namespace tessera::mig
