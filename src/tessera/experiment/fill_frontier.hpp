#pragma once
// The frontier of priority-fill's one knob: the latency-critical tail against best-effort
// throughput as best_effort_share moves, with every other policy run on the same scenario as a
// point beside it. Where no setting meets both goals (the tail within 1.1x of alone and
// best-effort work at MPS's throughput or more), the curve shows what each share costs and
// which baselines it dominates.

#include <string>
#include <vector>

#include "tessera/experiment/experiment.hpp"

namespace tessera::experiment {

// The row name of priority-fill at `share`, e.g. "priority-fill 0.25".
std::string fill_row(double share);
// The row of priority-fill with slo_guided, from the smallest share (a point of its own on the
// plot, not on the fixed shares' curve).
inline constexpr const char* kSloGuidedRow = "priority-fill-slo-guided";

// Rows: each of `baselines` (registered sharing modes, run as the scenario configures them),
// then priority-fill at each share in `shares`, in order, then kSloGuidedRow.
RunFn fill_frontier(std::vector<std::string> baselines, std::vector<double> shares);

}  // namespace tessera::experiment
