#pragma once
// Runs a scenario under each of its sharing modes, on the backend the caller makes for each mode
// (device/run_backend.hpp), and gathers the report.

#include <functional>
#include <memory>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/device/run_backend.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/metrics/timeline.hpp"
#include "tessera/scenario/scenario.hpp"

namespace tessera::scenario {

// Makes one mode's backend (its clock and GPUs) for `scenario`: the simulated GPU under the
// scenario's `sim:` assumptions, or real GPUs. Callers choose; the runner links neither.
using MakeRunBackend =
    std::function<core::Result<std::unique_ptr<device::RunBackend>>(const Scenario& scenario)>;

struct Progress {
  std::string_view mode;
  std::size_t mode_index;  // 0-based
  std::size_t mode_count;
  core::Nanos simulated;
  core::Nanos duration;
};

struct RunOptions {
  metrics::Timeline* timeline = nullptr;  // records every mode's run when set
  // Called about once per simulated second and at the end of each mode (from simulated time
  // only; throttling to the terminal is the caller's business).
  std::function<void(const Progress&)> progress;
  // Makes the sharing mode a scenario names; empty: the registry (gpu::make_sharing_mode). For
  // experiments that run a mode the registry does not offer (a policy variant under study).
  std::function<core::Result<std::unique_ptr<gpu::SharingMode>>(std::string_view mode,
                                                                const gpu::ModeSettings& settings)>
      make_mode;
  // Keeps each inference tenant's per-request TTFT and TPOT in its report (for plots; the JSON
  // and the table do not show them).
  bool keep_samples = false;
  // Makes each mode's backend; required (an empty one is an error).
  MakeRunBackend backend;
};

core::Result<metrics::RunReport> run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace tessera::scenario
