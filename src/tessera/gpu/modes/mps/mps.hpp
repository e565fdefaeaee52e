#pragma once
// "mps": NVIDIA's Multi-Process Service. Every client's kernels may run on all SMs and share the
// whole-device memory bandwidth at once, with no priorities between clients (how the device
// divides SMs between concurrent kernels is the backend's: the simulator gives each SM to one
// kernel at a time). An active thread
// percentage below 100 limits how many SMs a client may use without reserving them for it
// (NVIDIA MPS documentation, "Volta MPS Execution Resource Provisioning"); rounding the limit
// up to ceil(pct/100 x SMs) whole SMs is an assumption of the model.

#include <vector>

#include "tessera/gpu/modes/mps/mps_options.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

class MpsMode final : public SharingMode {
 public:
  explicit MpsMode(const MpsOptions& options) : options_(options) {}

  std::string_view name() const override { return "mps"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override;
  const MpsOptions& options() const { return options_; }

  // The per-client SM cap for `percentage` on a GPU of `sms` SMs; 0 (no cap) at 100%.
  static int sm_cap(double percentage, int sms);

 private:
  MpsOptions options_;
  device::GpuDevice* device_ = nullptr;
  TenantTable tenants_;
  std::vector<device::StreamId> streams_;  // per tenant, in attach order
};

}  // namespace tessera::gpu
