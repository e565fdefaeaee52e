#include "tessera/gpu/policy/physical_contexts.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::gpu {

using core::Code;
using core::Domain;

core::Result<PartitionGrid> PartitionGrid::of(const hw::GpuSpec& spec) {
  const int g = spec.green_ctx_sm_granularity;
  const int m = spec.green_ctx_min_sms;
  if (g <= 0 || m <= 0 || m % g != 0 || spec.sms <= 0 || spec.sms > device::kMaxSms ||
      m > spec.sms) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "GPU '{}' describes SM partitions of granularity {} and minimum {} on {} "
                       "SMs; both must be positive, the minimum a multiple of the granularity and "
                       "at most the SM count (at most {}); fix the GPU spec",
                       spec.name, g, m, spec.sms, device::kMaxSms);
  }
  return PartitionGrid{
      .granularity = g, .min_sms = m, .usable_sms = spec.sms / g * g, .device_sms = spec.sms};
}

int PartitionGrid::round(int sms) const {
  if (sms <= 0) return 0;
  return std::min(usable_sms, std::max(min_sms, sms / granularity * granularity));
}

int PartitionGrid::round_up(int sms) const {
  if (sms <= 0) return 0;
  return std::min(usable_sms,
                  std::max(min_sms, (sms + granularity - 1) / granularity * granularity));
}

core::Result<PhysicalLayout> plan_physical_contexts(const PartitionGrid& grid,
                                                    std::span<const int> sms,
                                                    std::span<const std::string> names) {
  const auto name = [&](std::size_t i) {
    return i < names.size() ? fmt::format("'{}'", names[i]) : fmt::format("#{}", i);
  };
  std::vector<int> sizes;
  int total = 0;
  std::string asked;
  for (std::size_t i = 0; i < sms.size(); ++i) {
    if (sms[i] < 0) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "physical contexts: tenant {} asks for {} SMs; a partition size is 0 or "
                         "more",
                         name(i), sms[i]);
    }
    sizes.push_back(grid.round(sms[i]));
    total += sizes.back();
    asked += fmt::format("{}{} {}", asked.empty() ? "" : " + ", name(i), sizes.back());
  }
  if (total > grid.usable_sms) {
    return core::failf(Domain::kGpu, Code::kResourceExhausted,
                       "physical contexts: partitions of {} = {} SMs (multiples of {}, at least "
                       "{}) exceed the {} usable SMs; lower the targets",
                       asked, total, grid.granularity, grid.min_sms, grid.usable_sms);
  }
  PhysicalLayout layout;
  int next = 0;
  for (const int size : sizes) {
    layout.partitions.push_back(device::SmMask::range(next, next + size));
    next += size;
  }
  layout.pool = device::SmMask::range(next, grid.device_sms);
  return layout;
}

}  // namespace tessera::gpu
