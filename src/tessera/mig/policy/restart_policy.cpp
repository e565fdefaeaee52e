#include "tessera/mig/policy/restart_policy.hpp"

#include <algorithm>

#include "tessera/mig/policy/scheduler.hpp"

namespace tessera::mig {

const hw::MigProfile* RestartPolicy::larger_than(int profile_id) const {
  if (scheme_ == Scheme::kSequential) return nullptr;
  if (scheme_ != Scheme::kStatic) return next_larger_profile(space_, profile_id);
  const hw::MigProfile* from = space_.geometry().find(profile_id);
  const hw::MigProfile* best = nullptr;
  for (const Placement& p : static_layout_.instances) {
    const hw::MigProfile* candidate = space_.geometry().find(p.profile_id);
    if (from == nullptr || candidate == nullptr) continue;
    if (candidate->memory_bytes <= from->memory_bytes) continue;
    if (best == nullptr || candidate->memory_bytes < best->memory_bytes) best = candidate;
  }
  return best;
}

std::int64_t RestartPolicy::capped(std::int64_t bytes) const {
  std::int64_t largest = 0;
  if (scheme_ == Scheme::kStatic) {
    for (const Placement& p : static_layout_.instances) {
      if (const hw::MigProfile* profile = space_.geometry().find(p.profile_id)) {
        largest = std::max(largest, profile->memory_bytes);
      }
    }
  } else if (const auto order = profile_order(space_); !order.empty()) {
    largest = order.back()->memory_bytes;
  }
  return largest > 0 ? std::min(bytes, largest) : bytes;
}

std::optional<RestartChoice> RestartPolicy::after_out_of_memory(
    int profile_id, std::int64_t need_bytes, std::int64_t actual_peak_bytes,
    const std::optional<PeakPrediction>& prediction) const {
  const hw::MigProfile* larger = larger_than(profile_id);
  if (larger == nullptr) return std::nullopt;
  std::int64_t need = std::max(need_bytes, actual_peak_bytes);
  if (prediction) need = std::max(need, capped(prediction->peak_bytes));
  return RestartChoice{.min_profile_id = larger->id, .need_bytes = need};
}

std::optional<EarlyRestart> RestartPolicy::early_restart(
    const std::optional<PeakPrediction>& prediction, int profile_id, std::int64_t instance_bytes,
    std::int64_t need_bytes) const {
  if (!prediction || !prediction->converged || prediction->peak_bytes <= instance_bytes) {
    return std::nullopt;
  }
  const hw::MigProfile* larger = larger_than(profile_id);
  if (larger == nullptr) return std::nullopt;
  return EarlyRestart{
      .restart = {.min_profile_id = larger->id,
                  .need_bytes = std::max(need_bytes, capped(prediction->peak_bytes))},
      .predicted_peak_bytes = prediction->peak_bytes};
}

}  // namespace tessera::mig
