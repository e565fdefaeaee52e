#include "tessera/gpu/policy/right_sizer.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::gpu {

int right_sized_tpcs(std::span<const LatencySample> seen, const std::optional<ScalingFit>& fit,
                     int max_tpcs, double slip) {
  const auto at = [&](int t) -> const LatencySample* {
    for (const auto& s : seen) {
      if (s.tpcs == t) return &s;
    }
    return nullptr;
  };
  const LatencySample* ref = at(max_tpcs);
  if (ref == nullptr || !(ref->latency_ns > 0)) return max_tpcs;
  const double bound = (1 + slip) * ref->latency_ns;
  int best = max_tpcs;
  double best_ns = ref->latency_ns;
  for (const auto& s : seen) {
    if (s.tpcs < best && s.latency_ns <= bound) {
      best = s.tpcs;
      best_ns = s.latency_ns;
    }
  }
  if (best <= 1) return best;
  // At least one TPC per step, or the walk would stall below 1 + 1/slip TPCs; such a step may
  // cost a compute-bound kernel more than the slip once (the count is then never tried again).
  int next = std::clamp(static_cast<int>(std::ceil(best * best_ns / bound - 1e-9)), 1, best - 1);
  if (fit) next = std::max(next, right_size(*fit, max_tpcs, slip));
  if (next >= best || at(next) != nullptr) return best;
  return next;
}

}  // namespace tessera::gpu
