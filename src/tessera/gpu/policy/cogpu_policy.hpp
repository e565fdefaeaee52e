#pragma once
// "cogpu": CoGPU's default SLO-aware remap policy (§4.3). Latency-critical tenants with work get
// the SMs their next step needs, higher priority first: a decode step what meets its TPOT budget
// (slo_demand), any other step (prefill, or work without a phase) every usable SM, since its
// time delays every request behind it. Best-effort tenants get the rest; when no inference has
// work, everything goes to best-effort.

#include "tessera/gpu/policy/remap_policy.hpp"

namespace tessera::gpu {

class CoGpuPolicy final : public RemapPolicy {
 public:
  std::string_view name() const override { return "cogpu"; }
  RemapTargets decide(const RemapSnapshot& snapshot) const override;
};

}  // namespace tessera::gpu
