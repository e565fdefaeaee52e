#pragma once
// "static-partitions": each tenant gets a disjoint SM set, aligned to TPC boundaries, with a
// bandwidth domain of the same fraction of device bandwidth: the way MIG slices behave (memory
// slices go with compute slices). Sizes come from TenantInfo::sm_share; tenants with share 0
// split evenly what the explicit shares leave. On a device without bandwidth domains (a real GPU,
// whose green contexts split SMs only) the partitions confine SMs and share the bandwidth; the
// mode's counters say so.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

// One tenant's slice before it is created on a device.
struct PartitionPlan {
  int first_sm;
  int sms;
  double bandwidth_share;     // static partitions: sms / device SMs
  std::int64_t memory_bytes;  // a MIG instance's own memory; 0: the device's, shared
  std::string label;  // what the slice is, beside its tenant's name ("3g.40gb"); may be empty
};

// Sizes and places the partitions for `tenants` on a GPU of `spec`: TPC counts are the shares
// rounded down, laid out in attach order from SM 0. TPCs that rounding leaves over stay unused,
// as a MIG layout leaves unused slices. Errors name the tenant that does not fit.
core::Result<std::vector<PartitionPlan>> plan_static_partitions(
    const hw::GpuSpec& spec, std::span<const TenantInfo> tenants);

// Plans one slice per tenant, in attach order (plan_static_partitions, or MIG instances).
using PartitionPlanner = core::Result<std::vector<PartitionPlan>> (*)(
    const hw::GpuSpec& spec, std::span<const TenantInfo> tenants);

class StaticPartitionsMode : public SharingMode {
 public:
  StaticPartitionsMode() : StaticPartitionsMode("static-partitions", &plan_static_partitions) {}
  std::string_view name() const override { return name_; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override;
  std::vector<ModeCounter> counters() const override;

 protected:
  // A mode whose slices `planner` lays out, attached and run as static partitions are.
  StaticPartitionsMode(std::string_view name, PartitionPlanner planner)
      : name_(name), planner_(planner) {}

 private:
  struct Slice {
    device::StreamId stream;
    device::SmMask sms;
    device::DomainId domain;
    std::int64_t memory_bytes;
    std::string label;
  };
  std::string_view name_;
  PartitionPlanner planner_;
  device::GpuDevice* device_ = nullptr;
  TenantTable tenants_;
  std::vector<Slice> slices_;  // per tenant, in attach order
  bool shared_bandwidth_ = false;
};

}  // namespace tessera::gpu
