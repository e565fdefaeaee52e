#include "tessera/cli/run_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "tessera/cli/backend_choice.hpp"
#include "tessera/cli/duration_flag.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/metrics/timeline.hpp"
#include "tessera/scenario/demo_scenario.hpp"
#include "tessera/scenario/html_report.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::cli {
namespace {

void add_run_flags(CLI::App& cmd, RunFlags& f) {
  cmd.add_option("--json", f.json_path, "Write the results as JSON to this file ('-' for stdout)");
  cmd.add_option("--report", f.report_path,
                 "Write the results as one HTML page (the table, and plots of TTFT and TPOT CDFs, "
                 "throughput, SLO attainment and memory per mode) that opens offline");
  cmd.add_option("--trace", f.trace_path,
                 "Write a Chrome Trace Event timeline (open it in https://ui.perfetto.dev)");
  cmd.add_option("--mode", f.modes, "Run only this sharing mode (repeatable)");
  cmd.add_option("--mode-option", f.mode_options,
                 "Set a mode option over the scenario's mode_options, KEY=VALUE, e.g. "
                 "slo_guided=true or best_effort_share=0.1 (repeatable; `tessera list` names "
                 "them)");
  add_duration_option(cmd, f.duration, "Override the simulated duration, e.g. 30s or 1h");
  cmd.add_option("--gpu", f.gpu, "Override the GPU model, e.g. H100-SXM5-80GB");
  cmd.add_option("--seed", f.seed, "Override the random seed");
  cmd.add_option("--backend", f.backend, std::string(kBackendHelp))->capture_default_str();
  cmd.add_flag("-q,--quiet", f.quiet, "No progress line");
}

core::Status apply_overrides(scenario::Scenario& s, const RunFlags& f) {
  if (!f.modes.empty()) {
    for (const auto& m : f.modes) {
      if (!gpu::is_sharing_mode(m)) {
        return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                           "--mode {}: unknown sharing mode; known: {}", m,
                           gpu::sharing_mode_names());
      }
    }
    s.modes = f.modes;
  }
  for (const std::string& option : f.mode_options) {
    const auto eq = option.find('=');
    const std::string key = option.substr(0, eq);
    const bool plain_key = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || c == '_';
    });
    if (eq == std::string::npos || !plain_key || option.find('\n') != std::string::npos) {
      return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                         "--mode-option '{}': expected KEY=VALUE, e.g. slo_guided=true", option);
    }
    TESSERA_ASSIGN_OR_RETURN(
        const auto node, core::ConfigNode::parse(fmt::format("{}: {}", key, option.substr(eq + 1)),
                                                 "--mode-option"));
    TESSERA_TRY(core::with_context(s.mode_options.apply(node), "--mode-option " + option));
  }
  TESSERA_ASSIGN_OR_RETURN(const auto duration, parse_duration_flag(f.duration));
  if (duration) s.duration = *duration;
  if (!f.gpu.empty()) {
    TESSERA_ASSIGN_OR_RETURN(s.gpu, core::with_context(hw::find_gpu(f.gpu), "--gpu"));
  }
  if (f.seed >= 0) s.seed = static_cast<std::uint64_t>(f.seed);
  return {};
}

core::Status run(scenario::Scenario s, const RunFlags& flags) {
  TESSERA_TRY(apply_overrides(s, flags));
  TESSERA_ASSIGN_OR_RETURN(const Backend backend, Backend::choose(flags.backend, flags.quiet));
  metrics::Timeline timeline;
  ProgressLine progress(!flags.quiet);
  scenario::RunOptions options;
  if (!flags.trace_path.empty()) options.timeline = &timeline;
  options.keep_samples = !flags.report_path.empty();  // the page's CDFs
  options.progress = [&progress](const scenario::Progress& p) { progress.update(p); };
  options.backend = backend.run_backends();
  auto report = scenario::run_scenario(s, options);
  progress.finish();
  if (!report) return std::unexpected(report.error());

  if (flags.json_path != "-") {
    fmt::print("{}\n", metrics::format_table(*report));
  }
  if (!flags.json_path.empty()) {
    TESSERA_TRY(write_text(flags.json_path, metrics::to_json(*report).dump(2)));
  }
  if (!flags.report_path.empty()) {
    TESSERA_TRY(write_text(flags.report_path, scenario::format_html_report(*report)));
  }
  if (!flags.trace_path.empty()) {
    TESSERA_TRY(timeline.write(flags.trace_path));
    if (timeline.kernel_events_dropped() > 0) {
      fmt::print(stderr,
                 "note: the timeline keeps the first kernels of each run; {} later kernels "
                 "are counted but not drawn\n",
                 timeline.kernel_events_dropped());
    }
  }
  return {};
}

}  // namespace

void add_simulate_options(CLI::App& command, RunFlags& flags) {
  command.add_option("SCENARIO", flags.scenario_path, "Scenario YAML or JSON file")->required();
  add_run_flags(command, flags);
}

void add_demo_options(CLI::App& command, RunFlags& flags) {
  add_run_flags(command, flags);
}

Outcome run_simulate_command(const RunFlags& flags) {
  TESSERA_ASSIGN_OR_RETURN(scenario::Scenario s, scenario::load_scenario(flags.scenario_path));
  return run(std::move(s), flags);
}

Outcome run_demo_command(const RunFlags& flags) {
  TESSERA_ASSIGN_OR_RETURN(scenario::Scenario s,
                           scenario::parse_scenario(scenario::demo_scenario_yaml(),
                                                    std::string(scenario::kDemoScenarioName), "."));
  return run(std::move(s), flags);
}

}  // namespace tessera::cli
