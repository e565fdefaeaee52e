#include "tessera/gpu/tpot_first_policy.hpp"

#include <algorithm>

namespace tessera::gpu {

namespace {

// Decode reservations form the first tiers and prefills the later ones; priority orders each.
constexpr int kPrefillTiers = 1 << 20;

}  // namespace

RemapTargets TpotFirstPolicy::decide(const RemapSnapshot& s) const {
  std::vector<Claim> claims;
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    if (!t.latency_critical || !t.has_work) continue;
    const int rank = -std::clamp(t.priority, -kPrefillTiers / 4, kPrefillTiers / 4);
    if (t.next_phase == workload::Phase::kDecode) {
      claims.push_back(
          {.tenant = i, .demand = slo_demand(s, t, workload::Phase::kDecode), .tier = rank});
    } else if (t.decoding) {
      // A new prefill joins running requests: it keeps the decode reservation and grows no
      // further than the larger of the decode need and its own TPOT-bounded need.
      const int decode = slo_demand(s, t, workload::Phase::kDecode);
      const int prefill = slo_demand(s, t, workload::Phase::kPrefill);
      claims.push_back({.tenant = i,
                        .demand = t.prefill.latency > 0 ? std::max(decode, prefill) : decode,
                        .tier = rank});
    } else {
      claims.push_back({.tenant = i,
                        .demand = slo_demand(s, t, workload::Phase::kPrefill),
                        .tier = kPrefillTiers + rank});
    }
  }
  return allocate(s, std::move(claims));
}

}  // namespace tessera::gpu
