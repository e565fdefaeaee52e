#pragma once
// The papers' experiments as tessera runs them: each names the paper and figure it reproduces,
// its setup, one or more scenario configurations (examples/experiments/*.yaml, built into the
// binary), the columns of its table, the paper's claims as data, and the model assumptions its
// result rests on. The one list of experiments, of every kind, is registry.hpp.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/experiment/claim.hpp"
#include "tessera/experiment/metric.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/scenario/runner.hpp"
#include "tessera/scenario/scenario.hpp"

namespace tessera::experiment {

// How one configuration is run. Most experiments run the scenario's modes side by side
// (scenario::run_scenario); one that needs more (a sweep, an on/off comparison) supplies its own,
// returning one ModeReport per row of its table.
using RunFn = std::function<core::Result<metrics::RunReport>(const scenario::Scenario&,
                                                             const scenario::RunOptions&)>;

struct Config {
  std::string label;          // "high contention"; may be empty when there is only one
  std::string scenario_file;  // under examples/experiments/, e.g. "hybrid.yaml"
  // A scenario file on disk instead of a built-in one (its trace paths relative to it); empty:
  // scenario_file.
  std::string path = {};
  // The file shown in the results: path when it is set, else scenario_file.
  const std::string& shown() const { return path.empty() ? scenario_file : path; }
};

// A plot of every row of a configuration, `y` against `x`, in the HTML report; the rows of one
// policy (the part of a row's name before a space) are joined by a line, in order of `x`.
struct FrontierPlot {
  Metric x;
  Metric y;
};

struct Experiment {
  std::string name;    // the command's argument: `tessera experiment NAME`
  std::string paper;   // "LithOS (SOSP 2025)"
  std::string figure;  // "§7.1, Fig. 16"
  std::string setup;   // one paragraph: the paper's setup and how tessera's differs
  std::vector<Config> configs;
  std::vector<Metric> columns;
  std::vector<Claim> claims;  // evaluated on every configuration
  // Model assumptions the result rests on, as keys of assumption_value (e.g.
  // "mode.atom_duration", "sim.achievable_compute_fraction").
  std::vector<std::string> assumptions;
  RunFn run;  // empty: scenario::run_scenario
  // The rows a custom `run` reports (claims are checked against these); empty: the scenario's
  // modes.
  std::vector<std::string> rows = {};
  std::optional<FrontierPlot> frontier = std::nullopt;
};

// The text of examples/experiments/FILE as built into the binary.
core::Result<std::string_view> scenario_text(std::string_view file);

// A configuration's scenario, parsed. Fails if a mode it lists is not a registered sharing mode
// (an experiment never drops a mode silently).
core::Result<scenario::Scenario> load_config(const Config& config);

// The value a scenario gives an assumption key, with its unit, e.g. "250 us"; unknown keys are
// an error listing the known ones.
core::Result<std::string> assumption_value(const scenario::Scenario& s, std::string_view key);

// Checks an experiment against one of its scenarios: every mode a claim names is run, every
// tenant a column or claim names exists, every assumption key is known.
core::Status validate(const Experiment& e, const scenario::Scenario& s);

}  // namespace tessera::experiment
