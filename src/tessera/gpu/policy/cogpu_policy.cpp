#include "tessera/gpu/policy/cogpu_policy.hpp"

namespace tessera::gpu {

RemapTargets CoGpuPolicy::decide(const RemapSnapshot& s) const {
  std::vector<Claim> claims;
  claims.reserve(s.tenants.size());
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    if (!t.latency_critical || !t.has_work) continue;
    // Nothing queued, a kernel in flight: size for the phase it is in.
    const auto phase = t.next_phase != workload::Phase::kUnspecified ? t.next_phase
                       : t.decoding                                  ? workload::Phase::kDecode
                                                                     : workload::Phase::kPrefill;
    // Prefill is compute-bound: every SM shortens it, and its time adds to the TTFT of every
    // request queued behind it and to the TPOT of every running one. The SLO's slack is taken
    // from decode steps, which are memory-bound and lose little with fewer SMs.
    const int demand =
        phase == workload::Phase::kDecode ? slo_demand(s, t, phase) : s.grid.usable_sms;
    claims.push_back({.tenant = i, .demand = demand, .tier = -t.priority});
  }
  return allocate(s, std::move(claims));
}

}  // namespace tessera::gpu
