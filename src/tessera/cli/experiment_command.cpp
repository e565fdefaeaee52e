#include "tessera/cli/experiment_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "tessera/cli/duration_flag.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/html_report.hpp"
#include "tessera/experiment/registry.hpp"
#include "tessera/experiment/run.hpp"
#include "tessera/metrics/timeline.hpp"

namespace tessera::cli {
namespace {

// With several configurations, each gets its own timeline: FILE's name with the configuration's
// scenario before the extension (trace.json -> trace.training-colocation-high.json).
std::string trace_path_for(const std::string& path, const experiment::Config& config,
                           bool several) {
  if (!several) return path;
  const std::filesystem::path p(path);
  const std::string stem = std::filesystem::path(config.scenario_file).stem().string();
  return (p.parent_path() / (p.stem().string() + "." + stem + p.extension().string())).string();
}

// A MIG study runs batch jobs on the simulated MIG GPU: no scenario, so no --duration or --trace.
core::Status run_mig_study(const experiment::MigExperiment& e, const ExperimentFlags& f) {
  if (!f.duration.empty() || !f.trace_path.empty() || !f.report_path.empty()) {
    return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                       "{} runs its job mixes to the end and draws no timeline or page: "
                       "--duration, --trace and --report do not apply (--json, --seed and -q do)",
                       e.name);
  }
  experiment::MigStudyOptions options;
  if (f.seed >= 0) options.seed = static_cast<std::uint64_t>(f.seed);
  ProgressLine progress(!f.quiet);
  options.progress = [&progress](std::int64_t done, std::int64_t total, std::string_view what) {
    progress.update(what, done, total);
  };
  auto result = experiment::run_mig_experiment(e, options);
  progress.finish();
  if (!result) return std::unexpected(result.error());
  if (f.json_path != "-") fmt::print("{}", experiment::format_result(*result));
  if (!f.json_path.empty()) {
    TESSERA_TRY(write_text(f.json_path, experiment::to_json(*result).dump(2)));
  }
  return {};
}

// A FlexTopo study runs the cluster simulator on its own protocol: no scenario, so no --duration or
// --trace.
core::Status run_cluster_study(const experiment::FlextopoExperiment& e, const ExperimentFlags& f) {
  if (!f.duration.empty() || !f.trace_path.empty() || !f.report_path.empty()) {
    return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                       "{} runs a fixed number of preemption cycles and draws no timeline or "
                       "page: --duration, --trace and --report do not apply (--json, --seed and "
                       "-q do)",
                       e.name);
  }
  experiment::FlextopoOptions options;
  if (f.seed >= 0) options.seed = static_cast<std::uint64_t>(f.seed);
  ProgressLine progress(!f.quiet);
  options.progress = [&progress](std::int64_t done, std::int64_t total, std::string_view what) {
    progress.update(what, done, total);
  };
  auto result = e.run(options);
  progress.finish();
  if (!result) return std::unexpected(result.error());
  if (f.json_path != "-") fmt::print("{}", result->text);
  if (!f.json_path.empty()) TESSERA_TRY(write_text(f.json_path, result->json.dump(2)));
  return {};
}

core::Status run_scenario_study(const experiment::Experiment& e, const ExperimentFlags& f) {
  experiment::Overrides overrides;
  TESSERA_ASSIGN_OR_RETURN(overrides.duration, parse_duration_flag(f.duration));
  if (f.seed >= 0) overrides.seed = static_cast<std::uint64_t>(f.seed);

  ProgressLine progress(!f.quiet);
  std::vector<std::pair<std::string, std::unique_ptr<metrics::Timeline>>> timelines;
  const bool several = e.configs.size() > 1;
  auto make_options = [&](const experiment::Config& config) {
    scenario::RunOptions options;
    if (!f.trace_path.empty()) {
      timelines.emplace_back(trace_path_for(f.trace_path, config, several),
                             std::make_unique<metrics::Timeline>());
      options.timeline = timelines.back().second.get();
    }
    options.progress = [&progress](const scenario::Progress& p) { progress.update(p); };
    // The page's latency CDFs are drawn from every request's figures.
    options.keep_samples = !f.report_path.empty();
    return options;
  };
  auto result = experiment::run_experiment(e, overrides, make_options);
  progress.finish();
  if (!result) return std::unexpected(result.error());

  if (f.json_path != "-") fmt::print("{}", experiment::format_result(*result));
  if (!f.json_path.empty()) {
    TESSERA_TRY(write_text(f.json_path, experiment::to_json(*result).dump(2)));
  }
  if (!f.report_path.empty()) {
    TESSERA_TRY(write_text(f.report_path, experiment::format_html_report(*result)));
  }
  for (const auto& [path, timeline] : timelines) {
    TESSERA_TRY(timeline->write(path));
    if (several && !f.quiet) fmt::print(stderr, "timeline: {}\n", path);
  }
  return {};
}

}  // namespace

void print_experiments() {
  for (const auto& e : experiment::experiments()) {
    fmt::print("  {:<20} {}, {}\n", e.name(), e.paper(), e.figure());
  }
}

void add_experiment_options(CLI::App& command, ExperimentFlags& f) {
  command.add_option("NAME", f.name, "Experiment name (--list shows them)");
  command.add_flag("--list", f.list, "List the experiments");
  command.add_option("--json", f.json_path,
                     "Write the results and claims as JSON to this file ('-' for stdout)");
  command.add_option("--trace", f.trace_path,
                     "Write a Chrome Trace Event timeline (open it in https://ui.perfetto.dev); "
                     "one file per configuration when there are several");
  command.add_option("--report", f.report_path,
                     "Write the results as one HTML page (per configuration the claims, the "
                     "experiment's table and the run's tables and plots) that opens offline; "
                     "for the experiments that run scenarios");
  add_duration_option(command, f.duration,
                      "Override the simulated duration of every configuration, e.g. 60s");
  command.add_option("--seed", f.seed, "Override the random seed");
  command.add_option("--scenario", f.scenario_path,
                     "frontier only: run it on this scenario file instead of the hybrid setup "
                     "(its most important service with an SLO against its first best-effort "
                     "tenant, a trainer where it has one)");
  command.add_flag("-q,--quiet", f.quiet, "No progress line");
}

Outcome run_experiment_command(const ExperimentFlags& f) {
  if (f.list) {
    print_experiments();
    return {};
  }
  if (f.name.empty()) {
    return core::fail(core::Domain::kScenario, core::Code::kInvalidArgument,
                      "name an experiment; `tessera experiment --list` shows them");
  }
  TESSERA_ASSIGN_OR_RETURN(const experiment::ExperimentEntry* entry,
                           experiment::find_experiment(f.name));
  if (!f.scenario_path.empty()) {
    const auto* e = entry->as<experiment::Experiment>();
    if (e == nullptr || !e->frontier) {
      return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                         "--scenario runs the frontier on a file of yours; '{}' has its own "
                         "scenarios (use `tessera simulate FILE` to run a file under every mode)",
                         f.name);
    }
    TESSERA_ASSIGN_OR_RETURN(const experiment::Experiment on_file,
                             experiment::frontier_on_file(f.scenario_path));
    return run_scenario_study(on_file, f);
  }
  if (const auto* e = entry->as<experiment::MigExperiment>()) return run_mig_study(*e, f);
  if (const auto* e = entry->as<experiment::FlextopoExperiment>()) return run_cluster_study(*e, f);
  return run_scenario_study(*entry->as<experiment::Experiment>(), f);
}

}  // namespace tessera::cli
