#include "tessera/gpu/policy/initial_split.hpp"

namespace tessera::gpu {

InitialSplit initial_split(const PartitionGrid& grid, std::span<const TenantInfo> tenants) {
  InitialSplit split;
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (tenants[i].latency_critical) split.order.push_back(i);
  }
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    if (!tenants[i].latency_critical) split.order.push_back(i);
  }
  const int n = static_cast<int>(tenants.size());
  const int granules = grid.usable_sms / grid.granularity;
  for (int k = 0; k < n; ++k) {
    split.sms.push_back((granules / n + (k < granules % n ? 1 : 0)) * grid.granularity);
  }
  return split;
}

}  // namespace tessera::gpu
