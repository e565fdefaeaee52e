#pragma once
// Runs an experiment, prints it for people (table, claims, where the numbers come from) and as
// JSON for programs.

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/experiment/experiment.hpp"

namespace tessera::experiment {

struct Overrides {
  std::optional<core::Nanos> duration;
  std::optional<std::uint64_t> seed;
};

struct ConfigResult {
  const Config* config;
  scenario::Scenario scenario;  // as run, overrides applied
  metrics::RunReport report;
  std::vector<ClaimResult> claims;
};

struct ExperimentResult {
  const Experiment* experiment;
  std::vector<ConfigResult> configs;
};

// `make_options` gives the run options of each configuration (its timeline, its progress); where
// they name no backend, the configuration runs on the simulated GPU.
core::Result<ExperimentResult> run_experiment(
    const Experiment& e, const Overrides& overrides,
    const std::function<scenario::RunOptions(const Config&)>& make_options);

// Per configuration: a table (rows = modes, columns = the experiment's metrics), the claims
// (paper figure | tessera figure | same direction?), then the source line naming the model
// assumptions.
std::string format_result(const ExperimentResult& result);
// Per configuration the RunReport JSON (metrics::to_json) with the claims beside it.
nlohmann::json to_json(const ExperimentResult& result);

// The pieces of format_result, for the HTML page (html_report.hpp) too.
// The experiment's table of one configuration: a header (mode, then the metrics), a row per mode.
std::vector<std::vector<std::string>> result_rows(const Experiment& e,
                                                  const metrics::RunReport& report);
// The claims' rows after a header: claim | paper | tessera (vs the baseline it was compared
// with) | same direction?
std::vector<std::array<std::string, 4>> claim_rows(const std::vector<ClaimResult>& claims);
// The model assumptions the figures rest on, with their values in this scenario.
std::string source_line(const Experiment& e, const scenario::Scenario& s);

// Pieces the MIG studies (mig_studies.hpp) print with too.
// Rows of cells as text columns: the first left-aligned (a name), the rest right-aligned
// (figures); the first row sets the column count.
std::string align_columns(const std::vector<std::vector<std::string>>& rows);
// The claims' table: claim | paper | tessera (vs the baseline it was compared with) | same
// direction?; empty for no claims.
std::string format_claims(const std::vector<ClaimResult>& claims);
nlohmann::json claim_json(const ClaimResult& claim);
// Rounded to 6 significant digits, like the RunReport JSON, so golden files stay stable.
double round6(double x);
// Words re-flowed into lines of at most `width` characters.
std::string wrap(std::string_view text, std::size_t width);

}  // namespace tessera::experiment
