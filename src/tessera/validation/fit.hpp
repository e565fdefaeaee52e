#pragma once
// Fits the simulated GPU's options to the measured rows the split assigns to fitting
// (split.hpp), per GPU and per group of options: each group's options are chosen to minimise a
// robust log error over the rows of its categories, the groups one after another (later groups
// see the earlier ones' values). NLopt's bounded Nelder-Mead does the search; it is
// deterministic, so the same rows give the same fit.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/core/error.hpp"
#include "tessera/validation/harness_costs.hpp"
#include "tessera/validation/measurement.hpp"
#include "tessera/workload/serving/engine_costs.hpp"

namespace tessera::validation {

struct FittedValue {
  std::string option;  // its `sim:` key
  double value = 0;    // in the option's unit (ns for durations)
  bool duration = false;
};

struct GroupFit {
  std::string group;  // "memory-bound kernels", "GEMM", ...
  std::size_t rows = 0;
  double loss_before = 0;  // mean of min(ln(simulated / measured)^2, 1)
  double loss_after = 0;
  int evaluations = 0;
  std::vector<FittedValue> values;
};

// The group that fits the serving engine's costs on step rows, after the GPU's options.
inline constexpr std::string_view kEngineGroup = "serving engine";

struct GpuFit {
  std::string gpu;
  sim::SimGpuOverrides overrides;               // every fitted option
  std::optional<workload::EngineCosts> engine;  // fitted on its step rows, if it has any
  std::optional<HarnessCosts> harness;          // fitted on its rows timed from the host, if any
  std::vector<GroupFit> groups;
};

// ASSUMPTION: enough for three or fewer options to settle to a relative step of 1e-3 (the fits
// on the shared profiles stop on the tolerance well before it). The most evaluations per group.
inline constexpr int kMaxFitEvaluations = 300;

// Called after each evaluation with (GPU, group, evaluations so far).
using FitProgress = std::function<void(const std::string&, const std::string&, int)>;

// One fit per GPU that has rows to fit on, in GPU-name order.
core::Result<std::vector<GpuFit>> fit(const MeasurementSet& set, const FitProgress& progress = {});

// The fit as text: per GPU and group the rows, the loss before and after and each value; then
// each GPU's values as a scenario's `sim:` section.
std::string format_fit(const std::vector<GpuFit>& fits);

}  // namespace tessera::validation
