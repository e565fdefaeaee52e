#include "tessera/gpu/modes/mps/mps.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/core/try.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

int MpsMode::sm_cap(double percentage, int sms) {
  if (percentage >= 100) return 0;
  // The small tolerance keeps an exact product (50% of 132 = 66) from rounding up to 67 through
  // floating-point error in pct/100.
  const double exact = percentage / 100.0 * static_cast<double>(sms);
  return std::clamp(static_cast<int>(std::ceil(exact - 1e-9)), 1, sms);
}

core::Status MpsMode::attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  const double pct = options_.active_thread_percentage;
  const int cap = sm_cap(pct, device.spec().sms);
  if (cap > 0 && !device.capabilities().sm_limit) {
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "mps: an active thread percentage of {} needs a device that can cap a "
                       "stream's SMs, and {} cannot; use 100 or a device with the sm_limit "
                       "capability",
                       pct, device.spec().name);
  }
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  std::vector<device::StreamId> streams;
  for (std::size_t i = 0; i < table.size(); ++i) {
    // Every client sees every SM and the whole-device bandwidth; only the cap differs from
    // exclusive use.
    const device::StreamConfig config{.context = context_for(i),
                                      .sms = {},
                                      .max_sms = cap,
                                      .bandwidth_domain = device::kWholeDevice,
                                      .priority = 0};
    TESSERA_ASSIGN_OR_RETURN(const auto stream, device.create_stream(config));
    streams.push_back(stream);
  }
  tenants_ = std::move(table);
  streams_ = std::move(streams);
  device_ = &device;
  return {};
}

core::Status MpsMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                             std::uint64_t tag, device::DoneCallback done) {
  TESSERA_ASSIGN_OR_RETURN(const auto index, tenants_.index_of(name(), tenant));
  return device_->submit(streams_[index], std::move(sequence), tag, std::move(done));
}

std::vector<PartitionInfo> MpsMode::partitions() const {
  if (device_ == nullptr) return {};
  return {PartitionInfo{.name = "shared",
                        .sms = device::SmMask::first(device_->spec().sms),
                        .bandwidth_domain = device::kWholeDevice,
                        .tenants = tenants_.ids()}};
}

}  // namespace tessera::gpu
