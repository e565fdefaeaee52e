#include "tessera/gpu/policy/tpc_shares.hpp"

#include <cmath>

#include "tessera/device/sm_mask.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

core::Status check_tpc_spec(std::string_view mode, const hw::GpuSpec& spec) {
  if (spec.sms_per_tpc <= 0 || spec.tpcs <= 0 || spec.tpcs * spec.sms_per_tpc > spec.sms ||
      spec.sms > device::kMaxSms) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "{}: GPU '{}' describes {} SMs in {} TPCs of {} SMs, which cannot be "
                       "divided by TPC (at most {} SMs); fix the GPU spec",
                       mode, spec.name, spec.sms, spec.tpcs, spec.sms_per_tpc, device::kMaxSms);
  }
  return {};
}

core::Status check_sm_share(std::string_view mode, const TenantInfo& tenant,
                            std::string_view zero_means) {
  if (!std::isfinite(tenant.sm_share) || tenant.sm_share < 0 || tenant.sm_share > 1) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "{}: tenant '{}' has SM share {}; a share is a fraction in (0, 1], or 0 "
                       "for {}",
                       mode, tenant.name, tenant.sm_share, zero_means);
  }
  return {};
}

}  // namespace tessera::gpu
