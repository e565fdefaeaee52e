#include "tessera/experiment/experiment.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tessera/core/try.hpp"
#include "tessera/experiment/data_dir.hpp"
#include "tessera/experiment/internal/scenario_files.hpp"
#include "tessera/experiment/mig_studies.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::experiment {

namespace {

using core::Result;

// The scenarios name the shared data as the checkout's examples/experiments sees it; built into
// the binary, they find those files in the data directory instead.
constexpr std::string_view kSharedDataFromScenarios = "../../../shared/data/";

std::string micros(core::Nanos ns) {
  return fmt::format("{:g} us", static_cast<double>(ns) / 1e3);
}

struct AssumptionKey {
  std::string_view key;
  std::string (*value)(const scenario::Scenario&);
};

// The simulator's model assumptions a result can rest on, each documented where it is declared
// (src/tessera/backends/sim/gpu/sim_gpu_options.hpp SimGpuOptions). The modes' ones are
// "mode.<key>" for every option a registered mode declares (gpu/registry.hpp).
constexpr AssumptionKey kSimAssumptions[] = {
    {"sim.achievable_compute_fraction",
     [](const scenario::Scenario& s) {
       return fmt::format("{:g}",
                          sim::options_for(s.gpu, s.sim_overrides).achievable_compute_fraction);
     }},
    {"sim.achievable_bandwidth_fraction",
     [](const scenario::Scenario& s) {
       return fmt::format("{:g}",
                          sim::options_for(s.gpu, s.sim_overrides).achievable_bandwidth_fraction);
     }},
    {"sim.sm_bandwidth_multiple",
     [](const scenario::Scenario& s) {
       return fmt::format("{:g}", sim::options_for(s.gpu, s.sim_overrides).sm_bandwidth_multiple);
     }},
    {"sim.launch_overhead",
     [](const scenario::Scenario& s) {
       return micros(sim::options_for(s.gpu, s.sim_overrides).launch_overhead);
     }},
    {"sim.atom_launch_overhead",
     [](const scenario::Scenario& s) {
       return micros(sim::options_for(s.gpu, s.sim_overrides).atom_launch_overhead);
     }},
    {"sim.yield_save_cost",
     [](const scenario::Scenario& s) {
       return micros(sim::options_for(s.gpu, s.sim_overrides).yield_save_cost);
     }},
    {"sim.co_residency",
     [](const scenario::Scenario& s) {
       return std::string(sim::options_for(s.gpu, s.sim_overrides).co_residency ? "on" : "off");
     }},
    {"sim.compute_power_weight",
     [](const scenario::Scenario& s) {
       return fmt::format("{:g}", sim::options_for(s.gpu, s.sim_overrides).compute_power_weight);
     }},
};

constexpr std::string_view kModePrefix = "mode.";

std::string assumption_keys() {
  std::vector<std::string> keys;
  for (const auto key : gpu::mode_option_keys())
    keys.push_back(fmt::format("{}{}", kModePrefix, key));
  for (const auto& a : kSimAssumptions) keys.emplace_back(a.key);
  return fmt::format("{}", fmt::join(keys, ", "));
}

core::Error invalid(std::string message) {
  return core::Error(core::Domain::kScenario, core::Code::kInvalidArgument, std::move(message));
}

bool has_tenant(const scenario::Scenario& s, const std::string& name) {
  return std::any_of(s.tenants.begin(), s.tenants.end(),
                     [&](const scenario::TenantSpec& t) { return t.name == name; });
}

// The rows a run of `e` on `s` reports.
const std::vector<std::string>& rows_of(const Experiment& e, const scenario::Scenario& s) {
  return e.rows.empty() ? s.modes : e.rows;
}

bool has_row(const Experiment& e, const scenario::Scenario& s, const std::string& row) {
  const auto& rows = rows_of(e, s);
  return std::find(rows.begin(), rows.end(), row) != rows.end();
}

bool needs_exclusive(const Metric& m) {
  return m.quantity == Quantity::kNormalizedThroughput || m.quantity == Quantity::kE2eP99VsAlone ||
         m.quantity == Quantity::kTpotP99VsAlone ||
         m.quantity == Quantity::kAggregateNormalizedThroughput ||
         m.quantity == Quantity::kTrainingNormalizedThroughput;
}

core::Status validate_metric(const Experiment& e, const scenario::Scenario& s, const Metric& m) {
  if (!m.tenant.empty() && !has_tenant(s, m.tenant)) {
    return std::unexpected(
        invalid(fmt::format("experiment '{}': '{}' names tenant '{}', which "
                            "scenario '{}' does not have",
                            e.name, label(m), m.tenant, s.name)));
  }
  if (needs_exclusive(m) && !has_row(e, s, "exclusive")) {
    return std::unexpected(invalid(fmt::format(
        "experiment '{}': '{}' is relative to each tenant alone, so scenario '{}' must run the "
        "exclusive mode",
        e.name, label(m), s.name)));
  }
  if (m.quantity == Quantity::kThroughputVsMps && !has_row(e, s, "mps")) {
    return std::unexpected(invalid(
        fmt::format("experiment '{}': '{}' is relative to MPS, so scenario '{}' must run the "
                    "mps mode",
                    e.name, label(m), s.name)));
  }
  return {};
}

}  // namespace

Result<std::string_view> scenario_text(std::string_view file) {
  for (const auto& f : embedded_scenarios()) {
    if (f.file == file) return f.text;
  }
  return core::failf(core::Domain::kScenario, core::Code::kNotFound,
                     "examples/experiments/{} is not built in; add it to "
                     "TESSERA_EXPERIMENT_SCENARIOS in src/tessera/experiment/CMakeLists.txt",
                     file);
}

Result<scenario::Scenario> load_config(const Config& config) {
  if (!config.path.empty()) return scenario::load_scenario(config.path);
  TESSERA_ASSIGN_OR_RETURN(const std::string_view text, scenario_text(config.scenario_file));
  const std::string source = "examples/experiments/" + config.scenario_file + " (built in)";
  // parse_scenario rejects a mode that is not registered, naming it and the known ones.
  TESSERA_ASSIGN_OR_RETURN(scenario::Scenario s, scenario::parse_scenario(text, source, ""));
  for (auto& t : s.tenants) {
    std::string& path = t.arrivals.trace_path;
    if (!path.starts_with(kSharedDataFromScenarios)) continue;
    TESSERA_ASSIGN_OR_RETURN(
        path, core::with_context(data_file(path.substr(kSharedDataFromScenarios.size())), source));
  }
  return s;
}

Result<std::string> assumption_value(const scenario::Scenario& s, std::string_view key) {
  if (key.starts_with(kModePrefix)) {
    if (auto value = s.mode_options.value(key.substr(kModePrefix.size()))) return *value;
  }
  for (const auto& a : kSimAssumptions) {
    if (a.key == key) return a.value(s);
  }
  return core::failf(core::Domain::kScenario, core::Code::kNotFound,
                     "unknown model assumption '{}'; known: {}", key, assumption_keys());
}

core::Status validate(const Experiment& e, const scenario::Scenario& s) {
  for (const auto& m : e.columns) TESSERA_TRY(validate_metric(e, s, m));
  for (const auto& c : e.claims) {
    TESSERA_TRY(validate_metric(e, s, c.metric));
    if (c.baselines.empty()) {
      return std::unexpected(invalid(
          fmt::format("experiment '{}': claim '{}' names no baseline", e.name, c.statement)));
    }
    std::vector<std::string> modes = c.baselines;
    modes.push_back(c.subject);
    for (const auto& m : modes) {
      if (!has_row(e, s, m)) {
        return std::unexpected(invalid(fmt::format(
            "experiment '{}': claim '{}' compares mode '{}', which a run of scenario '{}' does "
            "not report (it reports: {})",
            e.name, c.statement, m, s.name, fmt::join(rows_of(e, s), ", "))));
      }
    }
  }
  for (const auto& key : e.assumptions) {
    TESSERA_TRY(
        core::with_context(assumption_value(s, key), fmt::format("experiment '{}'", e.name)));
  }
  return {};
}

}  // namespace tessera::experiment
