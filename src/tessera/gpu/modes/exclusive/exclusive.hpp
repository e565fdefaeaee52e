#pragma once
// "exclusive": one tenant owns the whole GPU (all SMs, all bandwidth). The isolation reference
// every other mode is compared with; a scenario runs it by giving each tenant a GPU of its own.

#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

class ExclusiveMode final : public SharingMode {
 public:
  std::string_view name() const override { return "exclusive"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override;

 private:
  device::GpuDevice* device_ = nullptr;
  TenantTable tenants_;
  device::StreamId stream_ = 0;
};

}  // namespace tessera::gpu
