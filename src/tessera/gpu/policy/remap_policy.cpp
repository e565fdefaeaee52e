#include "tessera/gpu/policy/remap_policy.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace tessera::gpu {

namespace {

core::Nanos slo_of(const TenantSnapshot& t, workload::Phase phase) {
  switch (phase) {
    case workload::Phase::kPrefill: return t.ttft_slo;
    case workload::Phase::kDecode: return t.tpot_slo;
    default: return 0;
  }
}

const PhaseObservation* observation_of(const TenantSnapshot& t, workload::Phase phase) {
  switch (phase) {
    case workload::Phase::kPrefill: return &t.prefill;
    case workload::Phase::kDecode: return &t.decode;
    default: return nullptr;
  }
}

bool may_shrink(const RemapSnapshot& s, const TenantSnapshot& t) {
  return !t.latency_critical || s.now - t.last_change >= s.min_residency;
}

// Adds each claim's `demand` (here the extra SMs it still wants, a multiple of the granularity)
// out of `budget`: everything when it fits, otherwise in proportion to what each asks, in whole
// granules, the granules that do not divide going one at a time in order. Works in the claims'
// own storage (their demands are spent), so a decision allocates nothing per tier.
void grant_tier(const PartitionGrid& grid, std::span<Claim> tier, int& budget,
                std::vector<int>& grants) {
  int total = 0;
  for (const Claim& c : tier) total += c.demand;
  if (total <= budget) {
    for (const Claim& c : tier) grants[c.tenant] += c.demand;
    budget -= total;
    return;
  }
  const int g = grid.granularity;
  int want_total = 0;
  for (Claim& c : tier) {
    c.demand /= g;  // granules wanted
    want_total += c.demand;
  }
  const int have = budget / g;
  if (want_total == 0 || have == 0) return;
  int given = 0;
  for (Claim& c : tier) {
    const int share = static_cast<int>(static_cast<std::int64_t>(c.demand) * have / want_total);
    grants[c.tenant] += share * g;
    c.demand -= share;
    given += share;
  }
  for (std::size_t k = 0; given < have && k < tier.size(); ++k) {
    if (tier[k].demand > 0) {
      grants[tier[k].tenant] += g;
      --tier[k].demand;
      ++given;
    }
  }
  budget -= given * g;
}

}  // namespace

int slo_demand(const RemapSnapshot& s, const TenantSnapshot& t, workload::Phase phase) {
  core::Nanos slo = slo_of(t, phase);
  // While requests are mid-generation, every step of the tenant (a prefill too) holds up their
  // next token: it must fit the TPOT budget as well.
  if (t.decoding && t.tpot_slo > 0) slo = slo > 0 ? std::min(slo, t.tpot_slo) : t.tpot_slo;
  const PhaseObservation* seen = observation_of(t, phase);
  if (slo <= 0 || seen == nullptr || seen->latency <= 0 || seen->sms <= 0) {
    return s.grid.usable_sms;
  }
  const double goal = kSloStepBudget * static_cast<double>(slo);
  const double need = std::ceil(seen->sms * static_cast<double>(seen->latency) / goal);
  return s.grid.round_up(static_cast<int>(std::min<double>(need, s.grid.usable_sms)));
}

RemapTargets allocate(const RemapSnapshot& s, std::vector<Claim> claims) {
  const auto& tenants = s.tenants;
  RemapTargets out;
  const bool any_work =
      std::any_of(tenants.begin(), tenants.end(), [](const auto& t) { return t.has_work; });
  if (!any_work) {
    for (const auto& t : tenants) out.sms.push_back(s.grid.round(t.sms));
    return out;
  }
  std::vector<int> grants(tenants.size(), 0);
  std::vector<bool> claimed(tenants.size(), false);
  int budget = s.grid.usable_sms;

  // A tenant that may not shrink yet claims at least what it has.
  for (auto& c : claims) {
    const auto& t = tenants[c.tenant];
    c.demand = s.grid.round_up(c.demand);
    if (!may_shrink(s, t)) c.demand = std::max(c.demand, s.grid.round(t.sms));
    claimed[c.tenant] = true;
  }
  // Each best-effort tenant with work keeps a minimum partition (tessera's choice, not the
  // paper's: it never starves and a persistent kernel of it can always be preempted into it).
  std::vector<std::size_t> best_effort;
  best_effort.reserve(tenants.size());
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (!tenants[i].latency_critical && tenants[i].has_work) best_effort.push_back(i);
  }
  std::stable_sort(best_effort.begin(), best_effort.end(), [&](std::size_t a, std::size_t b) {
    return tenants[a].priority > tenants[b].priority;
  });
  int floors = 0;
  for (std::size_t k = 0; k < best_effort.size(); ++k) {
    if (floors + s.grid.min_sms > budget) break;
    floors += s.grid.min_sms;
  }
  budget -= floors;

  std::stable_sort(claims.begin(), claims.end(),
                   [](const Claim& a, const Claim& b) { return a.tier < b.tier; });
  // Every claim first gets the minimum partition, while SMs last: a lower tier delays a higher
  // one's growth, never its progress.
  for (const auto& c : claims) {
    if (c.demand > 0 && budget >= s.grid.min_sms) {
      grants[c.tenant] = s.grid.min_sms;
      budget -= s.grid.min_sms;
    }
  }
  // From here on a claim's demand is what it still wants; the claims are not read for it again.
  for (std::size_t i = 0; i < claims.size();) {
    const std::size_t first = i;
    for (; i < claims.size() && claims[i].tier == claims[first].tier; ++i) {
      claims[i].demand = std::max(0, claims[i].demand - grants[claims[i].tenant]);
    }
    grant_tier(s.grid, std::span(claims).subspan(first, i - first), budget, grants);
  }

  // Unclaimed latency-critical tenants within their residency keep their SMs.
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (claimed[i] || may_shrink(s, tenants[i])) continue;
    const int keep = s.grid.round(tenants[i].sms);
    if (keep > 0 && keep <= budget) {
      grants[i] = keep;
      budget -= keep;
    }
  }

  // Best-effort tenants with work share the rest and their floors evenly, higher priority first
  // for remainders.
  budget += floors;
  const int g = s.grid.granularity;
  while (!best_effort.empty()) {
    const int n = static_cast<int>(best_effort.size());
    const int granules = budget / g;
    if (granules * g >= n * s.grid.min_sms) {
      for (int k = 0; k < n; ++k) {
        grants[best_effort[static_cast<std::size_t>(k)]] =
            (granules / n + (k < granules % n ? 1 : 0)) * g;
      }
      budget -= granules * g;
      break;
    }
    best_effort.pop_back();  // too few SMs for everyone: the lowest priority waits
  }

  // Whatever is left goes to the claims, a granule at a time, so no SM idles needlessly.
  for (bool gave = true; gave && budget >= g;) {
    gave = false;
    for (const auto& c : claims) {
      if (budget < g) break;
      int& grant = grants[c.tenant];
      const int more = grant == 0 ? s.grid.min_sms : g;
      if (more > budget || grant + more > s.grid.usable_sms) continue;
      grant += more;
      budget -= more;
      gave = true;
    }
  }
  out.sms = std::move(grants);
  return out;
}

}  // namespace tessera::gpu
