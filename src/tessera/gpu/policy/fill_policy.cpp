#include "tessera/gpu/policy/fill_policy.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::gpu {

std::vector<int> fill_stream_priorities(std::span<const FillTenant> tenants) {
  std::vector<int> levels;
  for (const auto& t : tenants) {
    if (t.latency_critical) levels.push_back(t.priority);
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  std::vector<int> out;
  out.reserve(tenants.size());
  for (const auto& t : tenants) {
    if (!t.latency_critical) {
      out.push_back(0);
      continue;
    }
    const auto rank = std::lower_bound(levels.begin(), levels.end(), t.priority) - levels.begin();
    out.push_back(1 + static_cast<int>(rank));
  }
  return out;
}

int reserve_sms(const PartitionGrid& grid, double best_effort_share) {
  const auto wanted = std::lround(best_effort_share * static_cast<double>(grid.usable_sms));
  return grid.round_up(std::max(1, static_cast<int>(wanted)));
}

int next_reserve(const PartitionGrid& grid, int floor, int current, core::Nanos latency,
                 core::Nanos budget) {
  if (budget <= 0) return current;
  if (latency > budget) return std::max(floor, grid.round(current / 2));
  if (static_cast<double>(latency) < kReserveGrowBelow * static_cast<double>(budget)) {
    return std::min(grid.usable_sms, current + grid.granularity);
  }
  return current;
}

std::vector<device::SmMask> fill_sm_sets(const PartitionGrid& grid, int reserve_size,
                                         std::span<const FillTenant> tenants) {
  const bool serving = std::any_of(tenants.begin(), tenants.end(), [](const FillTenant& t) {
    return t.latency_critical && t.busy;
  });
  device::SmMask reserve;
  if (serving) reserve = device::SmMask::range(grid.usable_sms - reserve_size, grid.usable_sms);
  std::vector<device::SmMask> out;
  out.reserve(tenants.size());
  // Latency-critical kernels keep every SM: where a best-effort kernel leaves room on a reserve
  // SM, their blocks share it (confining them to the rest measured slower on the simulator).
  for (const auto& t : tenants) out.push_back(t.latency_critical ? device::SmMask{} : reserve);
  return out;
}

}  // namespace tessera::gpu
