#pragma once
// "tpot-first": CoGPU's policy for bursty LLM serving (§6.3) that protects time per output token.
// A latency-critical tenant with requests mid-generation gets SMs reserved for it, every usable
// one, for all its steps (a prefill joining running requests delays their tokens as much as a slow
// decode step does), and these reservations are served before any new prefill, whatever the
// priorities. A new prefill of a tenant with nothing generating gets only the share its TTFT
// budget needs (slo_demand), after every reservation: its share is delayed, which costs TTFT and
// gives best-effort work more (the paper's trade-off).

#include "tessera/gpu/policy/remap_policy.hpp"

namespace tessera::gpu {

class TpotFirstPolicy final : public RemapPolicy {
 public:
  std::string_view name() const override { return "tpot-first"; }
  RemapTargets decide(const RemapSnapshot& snapshot) const override;
};

}  // namespace tessera::gpu
