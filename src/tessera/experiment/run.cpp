#include "tessera/experiment/run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "tessera/core/try.hpp"
#include "tessera/experiment/sim_backend.hpp"

namespace tessera::experiment {

using core::Result;
using nlohmann::json;

double round6(double x) {
  if (!std::isfinite(x) || x == 0) return 0.0;
  const std::string text = fmt::format("{:.6g}", x);
  return std::strtod(text.c_str(), nullptr);
}

std::string wrap(std::string_view text, std::size_t width) {
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t next = text.find(' ', pos);
    const std::string_view word =
        text.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    if (!word.empty()) {
      if (!line.empty()) line += ' ';
      line += word;
    }
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return out + line;
}

namespace {

constexpr std::size_t kWrap = 100;

void apply(scenario::Scenario& s, const Overrides& o) {
  if (o.duration) s.duration = *o.duration;
  if (o.seed) s.seed = *o.seed;
}

std::string cell(const metrics::RunReport& report, const Metric& metric, const std::string& mode) {
  auto v = metric_value(report, metric, mode);
  return v ? fmt::format("{:.4g}", *v) : "-";
}

}  // namespace

std::string source_line(const Experiment& e, const scenario::Scenario& s) {
  std::vector<std::string> parts;
  for (const auto& key : e.assumptions) {
    // validate() has checked every key, so a lookup cannot fail here.
    if (auto v = assumption_value(s, key)) parts.push_back(fmt::format("{} = {}", key, *v));
  }
  return fmt::format(
      "Source: tessera's simulated GPU (not a real device); results are driven by these model "
      "assumptions: {} (see docs/experiments.md).",
      fmt::join(parts, ", "));
}

std::vector<std::vector<std::string>> result_rows(const Experiment& e,
                                                  const metrics::RunReport& report) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"mode"};
  for (const auto& m : e.columns) header.push_back(label(m));
  rows.push_back(header);
  for (const auto& mode : report.modes) {
    std::vector<std::string> row{mode.mode};
    for (const auto& m : e.columns) row.push_back(cell(report, m, mode.mode));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::array<std::string, 4>> claim_rows(const std::vector<ClaimResult>& claims) {
  std::vector<std::array<std::string, 4>> rows{{"claim", "paper", "tessera", "same direction?"}};
  for (const auto& c : claims) {
    const Claim& claim = *c.claim;
    const std::string what =
        claim.baselines.size() == 1
            ? fmt::format("{}: {} vs {}", claim.statement, claim.subject, claim.baselines.front())
            : fmt::format("{}: {} vs best of {}", claim.statement, claim.subject,
                          fmt::join(claim.baselines, "/"));
    std::string ours =
        c.tessera ? fmt::format("{} (vs {})", format_figure(*c.tessera, claim.form), c.baseline)
                  : "n/a: " + c.why_not;
    rows.push_back({what, format_figure(claim.paper, claim.form), ours,
                    c.tessera ? (c.same_direction ? "yes" : "no") : "n/a"});
  }
  return rows;
}

std::string align_columns(const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "";
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      // The row's name reads left-aligned, the figures right-aligned.
      line += i == 0 ? fmt::format("{:<{}}", row[i], width[i])
                     : fmt::format("  {:>{}}", row[i], width[i]);
    }
    out += line + "\n";
  }
  return out;
}

std::string format_claims(const std::vector<ClaimResult>& claims) {
  if (claims.empty()) return "";
  const std::vector<std::array<std::string, 4>> rows = claim_rows(claims);
  std::array<std::size_t, 3> width{};
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < 3; ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    out += fmt::format("{:<{}}  {:>{}}  {:<{}}  {}\n", r[0], width[0], r[1], width[1], r[2],
                       width[2], r[3]);
  }
  return out;
}

json claim_json(const ClaimResult& c) {
  const Claim& claim = *c.claim;
  return {{"statement", claim.statement},
          {"metric", label(claim.metric)},
          {"subject", claim.subject},
          {"baselines", claim.baselines},
          {"form", claim.form == Form::kTimes ? "times" : "percent"},
          {"paper", claim.paper},
          {"tessera", c.tessera ? json(round6(*c.tessera)) : json(nullptr)},
          {"compared_with", c.baseline},
          {"same_direction", c.same_direction},
          {"why_not", c.why_not}};
}

Result<ExperimentResult> run_experiment(
    const Experiment& e, const Overrides& overrides,
    const std::function<scenario::RunOptions(const Config&)>& make_options) {
  ExperimentResult result{.experiment = &e, .configs = {}};
  for (const auto& config : e.configs) {
    const std::string where = config.label.empty()
                                  ? fmt::format("experiment '{}'", e.name)
                                  : fmt::format("experiment '{}' ({})", e.name, config.label);
    TESSERA_ASSIGN_OR_RETURN(scenario::Scenario s, core::with_context(load_config(config), where));
    apply(s, overrides);
    TESSERA_TRY(validate(e, s));
    scenario::RunOptions options = make_options ? make_options(config) : scenario::RunOptions{};
    if (!options.backend) options.backend = sim_backends();
    TESSERA_ASSIGN_OR_RETURN(
        metrics::RunReport report,
        core::with_context(e.run ? e.run(s, options) : scenario::run_scenario(s, options), where));
    ConfigResult out{
        .config = &config, .scenario = std::move(s), .report = std::move(report), .claims = {}};
    for (const auto& claim : e.claims) out.claims.push_back(evaluate(out.report, claim));
    result.configs.push_back(std::move(out));
  }
  return result;
}

std::string format_result(const ExperimentResult& result) {
  const Experiment& e = *result.experiment;
  std::string out = fmt::format("{}: {} {}\n{}\n", e.name, e.paper, e.figure, wrap(e.setup, kWrap));
  for (const auto& c : result.configs) {
    const auto& s = c.scenario;
    out +=
        fmt::format("\n== {}{}: {} on {} ({}), {:g} s simulated, seed {} ==\n",
                    c.config->label.empty() ? "" : c.config->label + " / ", c.config->shown(),
                    s.name, c.report.gpu, c.report.backend, core::to_seconds(s.duration), s.seed);
    out += align_columns(result_rows(e, c.report));
    // fmt::format, not "\n" + string: GCC 12 at -O3 warns falsely (-Wrestrict, GCC PR105651).
    if (!c.claims.empty()) out += fmt::format("\n{}", format_claims(c.claims));
    out += fmt::format("\n{}\n", wrap(source_line(e, s), kWrap));
  }
  return out;
}

json to_json(const ExperimentResult& result) {
  const Experiment& e = *result.experiment;
  json configs = json::array();
  for (const auto& c : result.configs) {
    json claims = json::array();
    for (const auto& cr : c.claims) claims.push_back(claim_json(cr));
    json assumptions = json::object();
    for (const auto& key : e.assumptions) {
      if (auto v = assumption_value(c.scenario, key)) assumptions[key] = *v;
    }
    configs.push_back({{"label", c.config->label},
                       {"scenario_file", c.config->shown()},
                       {"report", metrics::to_json(c.report)},
                       {"claims", std::move(claims)},
                       {"assumptions", std::move(assumptions)}});
  }
  return {{"experiment", e.name},
          {"paper", e.paper},
          {"figure", e.figure},
          {"source", "tessera's simulated GPU (not a real device)"},
          {"configs", std::move(configs)}};
}

}  // namespace tessera::experiment
