#pragma once
// Checks shared by the modes that divide a GPU by TPC from tenants' SM shares (static-partitions
// and lithos), so both accept and reject the same GPU specs and shares with the same words.

#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::gpu {

// Shares are user input in decimal ("0.3"); this tolerance keeps 0.1 + 0.2 + 0.7 from counting
// as over-subscribed and 0.5 x 66 TPCs from rounding down to 32.
inline constexpr double kShareTolerance = 1e-9;

// Fails unless `spec` lays its SMs out as whole TPCs within device::kMaxSms; `mode` names the
// mode in the message.
core::Status check_tpc_spec(std::string_view mode, const hw::GpuSpec& spec);

// Fails unless `tenant.sm_share` is a fraction in [0, 1]; `zero_means` says what share 0 asks
// for under `mode`.
core::Status check_sm_share(std::string_view mode, const TenantInfo& tenant,
                            std::string_view zero_means);

}  // namespace tessera::gpu
