#include "tessera/gpu/modes/exclusive/exclusive.hpp"

#include "tessera/core/try.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

core::Status ExclusiveMode::attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  if (table.size() > 1) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "exclusive mode runs exactly one tenant per GPU, but was given {} ({}); "
                       "give each tenant its own GPU, or choose a mode that shares one "
                       "(time-slicing, mps, static-partitions)",
                       table.size(), table.describe());
  }
  const device::StreamConfig config{.context = context_for(0),
                                    .sms = {},  // empty: every SM of the device
                                    .max_sms = 0,
                                    .bandwidth_domain = device::kWholeDevice,
                                    .priority = 0};
  TESSERA_ASSIGN_OR_RETURN(stream_, device.create_stream(config));
  tenants_ = std::move(table);
  device_ = &device;
  return {};
}

core::Status ExclusiveMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                   std::uint64_t tag, device::DoneCallback done) {
  TESSERA_TRY(tenants_.index_of(name(), tenant));
  return device_->submit(stream_, std::move(sequence), tag, std::move(done));
}

std::vector<PartitionInfo> ExclusiveMode::partitions() const {
  if (device_ == nullptr) return {};
  return {PartitionInfo{.name = "gpu",
                        .sms = device::SmMask::first(device_->spec().sms),
                        .bandwidth_domain = device::kWholeDevice,
                        .tenants = tenants_.ids()}};
}

}  // namespace tessera::gpu
