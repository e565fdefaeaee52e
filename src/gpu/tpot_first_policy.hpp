#pragma once
// "tpot-first": CoGPU's policy for bursty LLM serving (§6.3) that protects time per output token.
// A latency-critical tenant with requests mid-generation keeps SMs reserved for its decode steps,
// and those reservations are served before any prefill, whatever the priorities. A new prefill
// of a tenant that is decoding runs on the decode reservation instead of growing the partition:
// its share is delayed, which costs TTFT (the paper's trade-off). Prefills of tenants that are
// not decoding are sized as cogpu sizes them, after every decode reservation.

#include "tessera/gpu/remap_policy.hpp"

namespace tessera::gpu {

class TpotFirstPolicy final : public RemapPolicy {
 public:
  std::string_view name() const override { return "tpot-first"; }
  RemapTargets decide(const RemapSnapshot& snapshot) const override;
};

}  // namespace tessera::gpu
