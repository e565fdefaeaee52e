#include "tessera/gpu/policy/tpot_first_policy.hpp"

#include <algorithm>

namespace tessera::gpu {

namespace {

// Decode reservations form the first tiers and prefills the later ones; priority orders each.
constexpr int kPrefillTiers = 1 << 20;

}  // namespace

RemapTargets TpotFirstPolicy::decide(const RemapSnapshot& s) const {
  std::vector<Claim> claims;
  claims.reserve(s.tenants.size());
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    if (!t.latency_critical || !t.has_work) continue;
    const int rank = -std::clamp(t.priority, -kPrefillTiers / 4, kPrefillTiers / 4);
    if (t.decoding || t.next_phase == workload::Phase::kDecode) {
      // Requests are mid-generation: every step of this tenant delays their next token.
      claims.push_back({.tenant = i, .demand = s.grid.usable_sms, .tier = rank});
    } else {
      // A new prefill with no request generating: its share waits for every reservation and
      // is sized only to its TTFT budget.
      claims.push_back({.tenant = i,
                        .demand = slo_demand(s, t, workload::Phase::kPrefill),
                        .tier = kPrefillTiers + rank});
    }
  }
  return allocate(s, std::move(claims));
}

}  // namespace tessera::gpu
