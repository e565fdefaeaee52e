#pragma once
// "static-partitions": each tenant gets a disjoint SM set, aligned to TPC boundaries, with a
// bandwidth domain of the same fraction of device bandwidth: the way MIG slices behave (memory
// slices go with compute slices). Sizes come from TenantInfo::sm_share; tenants with share 0
// split evenly what the explicit shares leave. On a device without bandwidth domains (a real GPU,
// whose green contexts split SMs only) the partitions confine SMs and share the bandwidth; the
// mode's counters say so.

#include <vector>

#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

// One tenant's slice before it is created on a device.
struct PartitionPlan {
  int first_sm;
  int sms;
  double bandwidth_share;  // = sms / device SMs
};

// Sizes and places the partitions for `tenants` on a GPU of `spec`: TPC counts are the shares
// rounded down, laid out in attach order from SM 0. TPCs that rounding leaves over stay unused,
// as a MIG layout leaves unused slices. Errors name the tenant that does not fit.
core::Result<std::vector<PartitionPlan>> plan_static_partitions(
    const hw::GpuSpec& spec, std::span<const TenantInfo> tenants);

class StaticPartitionsMode final : public SharingMode {
 public:
  std::string_view name() const override { return "static-partitions"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override;
  std::vector<ModeCounter> counters() const override;

 private:
  struct Slice {
    device::StreamId stream;
    device::SmMask sms;
    device::DomainId domain;
  };
  device::GpuDevice* device_ = nullptr;
  TenantTable tenants_;
  std::vector<Slice> slices_;  // per tenant, in attach order
  bool shared_bandwidth_ = false;
};

}  // namespace tessera::gpu
