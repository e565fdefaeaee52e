#pragma once
// "cogpu": CoGPU's default SLO-aware remap policy (§4.3). Latency-critical tenants with work get
// the SMs their next step needs to meet its SLO (slo_demand), higher priority first; best-effort
// tenants get the rest; when no inference has work, everything goes to best-effort.

#include "tessera/gpu/remap_policy.hpp"

namespace tessera::gpu {

class CoGpuPolicy final : public RemapPolicy {
 public:
  std::string_view name() const override { return "cogpu"; }
  RemapTargets decide(const RemapSnapshot& snapshot) const override;
};

}  // namespace tessera::gpu
