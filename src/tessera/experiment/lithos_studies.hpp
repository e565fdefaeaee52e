#pragma once
// Runs for the experiments that study one policy with its own options switched, rather than
// policies side by side: LithOS's right-sizing (§7.2) and DVFS (§7.3). Each variant is the
// scenario run under `lithos` with its options changed; the right-sizing study adds a profile
// sweep that measures how well the scaling curve predicts TPC counts it was not fitted on.

#include <string>
#include <vector>

#include "tessera/experiment/experiment.hpp"
#include "tessera/gpu/modes/lithos/lithos_options.hpp"

namespace tessera::experiment {

struct Variant {
  std::string label;  // the row's name, e.g. "lithos+right-sizing"
  void (*apply)(gpu::LithosOptions&);
};

// One ModeReport per variant (named by its label), in order; with `sweep`, one more row from
// held_out_sweep.
RunFn lithos_variants(std::vector<Variant> variants, bool sweep);

// The row name held_out_sweep reports under.
inline constexpr std::string_view kSweepRow = "held-out sweep";

// Times each distinct kernel of the scenario's tenants (a decode step and a prefill of each
// inference model, an iteration of each training job) alone on the scenario's simulated GPU at
// 1, 2, 4, ... and all TPCs, fits l(t) = m/t + b on 1 and all TPCs (LithOS's two points) and
// reports the error on the other counts: counters kernels_profiled, held_out_points,
// held_out_mean_err_pct (mean over kernels of their mean error) and held_out_max_err_pct.
core::Result<metrics::ModeReport> held_out_sweep(const scenario::Scenario& s);

}  // namespace tessera::experiment
