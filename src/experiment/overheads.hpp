#pragma once
// CoGPU Fig. 10: what cooperative migration costs a tenant, normalized to running alone. The
// cogpu runtime only remaps when its policy changes a partition, and a tenant alone never needs
// one; so the study runs the runtime under RemapDrill, a policy that moves every context between
// two partition sizes on a fixed period, and compares the tenant's throughput with exclusive.

#include <string>

#include "tessera/experiment/experiment.hpp"
#include "tessera/gpu/remap_policy.hpp"

namespace tessera::experiment {

// Gives each tenant with work an even share of the usable SMs, one granule less on every other
// period, so every context is migrated about once per `period` (the runtime re-evaluates at
// submissions and completions). Pure: decides from the snapshot's time only.
class RemapDrill final : public gpu::RemapPolicy {
 public:
  explicit RemapDrill(core::Nanos period) : period_(period) {}
  std::string_view name() const override { return "remap-drill"; }
  gpu::RemapTargets decide(const gpu::RemapSnapshot& snapshot) const override;

 private:
  core::Nanos period_;
};

// The row name of the cogpu runtime under a RemapDrill of `period`, e.g. "cogpu+remap/10ms".
std::string drill_row(core::Nanos period);

// Rows: the scenario's own modes (exclusive and cogpu), then the cogpu runtime under a RemapDrill
// of each period in `periods`.
RunFn remap_overheads(std::vector<core::Nanos> periods);

}  // namespace tessera::experiment
