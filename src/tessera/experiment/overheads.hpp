#pragma once
// CoGPU Fig. 10: what cooperative migration costs a tenant, normalized to running alone. The
// cogpu runtime only remaps when its policy changes a partition, and a tenant alone never needs
// one; so the study runs the runtime under RemapDrill, a policy that moves every context between
// two partition sizes on a fixed period, and compares the tenant's throughput with exclusive.

#include <string>
#include <string_view>
#include <vector>

#include "tessera/experiment/experiment.hpp"
#include "tessera/gpu/policy/remap_policy.hpp"

namespace tessera::experiment {

// Gives each tenant with work an even share of the usable SMs, one granule less on every other
// period, so every context is migrated once per `period`: the answer names the next period's
// start as its revisit time, so the runtime asks again then, mid-kernel if one is running (and
// preempts it if it is persistent). Pure: decides from the snapshot's time only.
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

// The row name of `row` run on the job with persistent kernels, e.g. "persistent exclusive".
std::string persistent_row(std::string_view row);

// CoGPU's two overheads. Context switching: remap_overheads on the scenario with every training
// tenant's persistent_gemms removed (remaps wait for kernel boundaries). Preemption: the same rows
// on the scenario as given, named by persistent_row, where a drill's remap that lands while a
// persistent kernel runs stops it at its next checkpoint. Fails if no training tenant of the
// scenario has persistent_gemms.
RunFn preemption_overheads(std::vector<core::Nanos> periods);

}  // namespace tessera::experiment
