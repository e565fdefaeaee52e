// The tessera command: simulate scenarios, run the demo and the papers' experiments, list what is
// built in.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "tessera/cli/agent_command.hpp"
#include "tessera/cli/backend_choice.hpp"
#include "tessera/cli/calibrate_command.hpp"
#include "tessera/cli/cluster_sim_command.hpp"
#include "tessera/cli/determinism_command.hpp"
#include "tessera/cli/extender_command.hpp"
#include "tessera/cli/mig_command.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/cli/topology_command.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/core/version.hpp"
#include "tessera/experiment/data_dir.hpp"
#include "tessera/experiment/flextopo_study.hpp"
#include "tessera/experiment/mig_studies.hpp"
#include "tessera/experiment/run.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/scenario/demo_scenario.hpp"
#include "tessera/scenario/runner.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::cli {
namespace {

struct RunFlags {
  std::string json_path;
  std::string trace_path;
  std::vector<std::string> modes;
  std::string duration;
  std::string gpu;
  std::int64_t seed = -1;
  std::string backend = "sim";
  bool quiet = false;
};

void add_run_flags(CLI::App& cmd, RunFlags& f) {
  cmd.add_option("--json", f.json_path, "Write the results as JSON to this file ('-' for stdout)");
  cmd.add_option("--trace", f.trace_path,
                 "Write a Chrome Trace Event timeline (open it in https://ui.perfetto.dev)");
  cmd.add_option("--mode", f.modes, "Run only this sharing mode (repeatable)");
  cmd.add_option("--duration", f.duration, "Override the simulated duration, e.g. 30s or 1h");
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
  if (!f.duration.empty()) {
    TESSERA_ASSIGN_OR_RETURN(s.duration,
                             core::with_context(core::parse_duration(f.duration), "--duration"));
    if (s.duration <= 0) {
      return core::fail(core::Domain::kScenario, core::Code::kInvalidArgument,
                        "--duration must be > 0");
    }
  }
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
  options.progress = [&progress](const scenario::Progress& p) { progress.update(p); };
  if (backend.real()) {
    options.backend = [&backend] { return scenario::make_cuda_backend(backend.driver()); };
  }
  auto report = scenario::run_scenario(s, options);
  progress.finish();
  if (!report) return std::unexpected(report.error());

  if (flags.json_path != "-") {
    fmt::print("{}\n", metrics::format_table(*report));
  }
  if (!flags.json_path.empty()) {
    TESSERA_TRY(write_text(flags.json_path, metrics::to_json(*report).dump(2)));
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

void list_experiments() {
  for (const auto& e : experiment::experiments()) {
    fmt::print("  {:<20} {}, {}\n", e.name, e.paper, e.figure);
  }
  for (const auto& e : experiment::mig_experiments()) {
    fmt::print("  {:<20} {}, {}\n", e.name, e.paper, e.figure);
  }
  for (const auto& e : experiment::flextopo_experiments()) {
    fmt::print("  {:<20} {}, {}\n", e.name, e.paper, e.figure);
  }
}

void list_builtins() {
  fmt::print("GPUs:\n");
  for (const auto& g : hw::gpu_catalog()) {
    fmt::print("  {:<18} {} SMs, {:.0f} GiB, {:.2f} TB/s, {:.0f} W\n", g.name, g.sms,
               static_cast<double>(g.memory_bytes) / (1ull << 30),
               g.memory_bandwidth_bytes_per_s / 1e12, g.tdp_watts);
  }
  fmt::print("Inference models:\n");
  for (const auto& m : workload::model_catalog()) {
    fmt::print("  {:<18} {:.2f} B parameters, {} layers\n", m.name, m.parameters() / 1e9, m.layers);
  }
  fmt::print("Training models:\n");
  for (const auto& m : workload::training_catalog()) {
    fmt::print("  {:<18} {} (default batch {})\n", m.name, m.description, m.default_batch);
  }
  fmt::print("Sharing modes:\n");
  for (const auto& e : gpu::sharing_modes()) fmt::print("  {:<18} {}\n", e.name, e.summary);
  fmt::print("Experiments (tessera experiment NAME):\n");
  list_experiments();
}

struct ExperimentFlags {
  std::string name;
  bool list = false;
  std::string json_path;
  std::string trace_path;
  std::string duration;
  std::int64_t seed = -1;
  bool quiet = false;
};

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
core::Status run_mig_experiment(const experiment::MigExperiment& e, const ExperimentFlags& f) {
  if (!f.duration.empty() || !f.trace_path.empty()) {
    return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                       "{} runs its job mixes to the end and draws no timeline: --duration and "
                       "--trace do not apply (--json, --seed and -q do)",
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
core::Status run_flextopo_experiment(const experiment::FlextopoExperiment& e,
                                     const ExperimentFlags& f) {
  if (!f.duration.empty() || !f.trace_path.empty()) {
    return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                       "{} runs a fixed number of preemption cycles and draws no timeline: "
                       "--duration and --trace do not apply (--json, --seed and -q do)",
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

core::Status run_experiment(const ExperimentFlags& f) {
  if (f.list) {
    list_experiments();
    return {};
  }
  if (f.name.empty()) {
    return core::fail(core::Domain::kScenario, core::Code::kInvalidArgument,
                      "name an experiment; `tessera experiment --list` shows them");
  }
  if (const auto* mig = experiment::find_mig_experiment(f.name)) return run_mig_experiment(*mig, f);
  if (const auto* ft = experiment::find_flextopo_experiment(f.name)) {
    return run_flextopo_experiment(*ft, f);
  }
  TESSERA_ASSIGN_OR_RETURN(const experiment::Experiment* e, experiment::find_experiment(f.name));
  experiment::Overrides overrides;
  if (!f.duration.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const core::Nanos d,
                             core::with_context(core::parse_duration(f.duration), "--duration"));
    if (d <= 0) {
      return core::fail(core::Domain::kScenario, core::Code::kInvalidArgument,
                        "--duration must be > 0");
    }
    overrides.duration = d;
  }
  if (f.seed >= 0) overrides.seed = static_cast<std::uint64_t>(f.seed);

  ProgressLine progress(!f.quiet);
  std::vector<std::pair<std::string, std::unique_ptr<metrics::Timeline>>> timelines;
  const bool several = e->configs.size() > 1;
  auto make_options = [&](const experiment::Config& config) {
    scenario::RunOptions options;
    if (!f.trace_path.empty()) {
      timelines.emplace_back(trace_path_for(f.trace_path, config, several),
                             std::make_unique<metrics::Timeline>());
      options.timeline = timelines.back().second.get();
    }
    options.progress = [&progress](const scenario::Progress& p) { progress.update(p); };
    return options;
  };
  auto result = experiment::run_experiment(*e, overrides, make_options);
  progress.finish();
  if (!result) return std::unexpected(result.error());

  if (f.json_path != "-") fmt::print("{}", experiment::format_result(*result));
  if (!f.json_path.empty()) {
    TESSERA_TRY(write_text(f.json_path, experiment::to_json(*result).dump(2)));
  }
  for (const auto& [path, timeline] : timelines) {
    TESSERA_TRY(timeline->write(path));
    if (several && !f.quiet) fmt::print(stderr, "timeline: {}\n", path);
  }
  return {};
}

int fail_with(const core::Error& e) {
  fmt::print(stderr, "tessera: error: {}\n", e.message());
  return 1;
}

}  // namespace
}  // namespace tessera::cli

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{
      "tessera: share NVIDIA GPUs between latency-critical inference and best-effort work.\n"
      "Without a GPU, everything runs on tessera's discrete-event GPU simulator."};
  app.set_version_flag("--version", fmt::format("tessera {}", core::kVersion));
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::help);  // a wrong flag shows the usage, not just a line
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  std::string data_dir;
  app.add_option("--data-dir", data_dir,
                 "The public data sets the experiments replay (default: $TESSERA_DATA_DIR, else "
                 "../shared/data)");

  cli::RunFlags sim_flags;
  std::string scenario_path;
  auto* simulate = app.add_subcommand("simulate", "Run a scenario file under its sharing modes");
  simulate->add_option("SCENARIO", scenario_path, "Scenario YAML or JSON file")->required();
  cli::add_run_flags(*simulate, sim_flags);

  cli::RunFlags demo_flags;
  auto* demo = app.add_subcommand(
      "demo",
      "LLM inference with an SLO beside a training job on a simulated H100, under every "
      "sharing mode: the baselines, lithos, cogpu and tpot-first (the built-in "
      "examples/demo.yaml)");
  cli::add_run_flags(*demo, demo_flags);

  cli::ExperimentFlags exp_flags;
  auto* exp = app.add_subcommand(
      "experiment",
      "Run one of the papers' experiments (LithOS, CoGPU, MIGM, FlexTopo) side by side with the "
      "baselines, with the paper's figures next to tessera's");
  exp->add_option("NAME", exp_flags.name, "Experiment name (--list shows them)");
  exp->add_flag("--list", exp_flags.list, "List the experiments");
  exp->add_option("--json", exp_flags.json_path,
                  "Write the results and claims as JSON to this file ('-' for stdout)");
  exp->add_option("--trace", exp_flags.trace_path,
                  "Write a Chrome Trace Event timeline (open it in https://ui.perfetto.dev); one "
                  "file per configuration when there are several");
  exp->add_option("--duration", exp_flags.duration,
                  "Override the simulated duration of every configuration, e.g. 60s");
  exp->add_option("--seed", exp_flags.seed, "Override the random seed");
  exp->add_flag("-q,--quiet", exp_flags.quiet, "No progress line");

  auto* list = app.add_subcommand("list", "List built-in GPUs, models and sharing modes");

  cli::MigFlags mig_flags;
  cli::add_mig_command(app, mig_flags);

  cli::TopologyFlags topology_flags;
  cli::add_topology_command(app, topology_flags);

  cli::AgentFlags agent_flags;
  cli::add_agent_command(app, agent_flags);

  cli::ExtenderFlags extender_flags;
  cli::add_extender_command(app, extender_flags);

  cli::ClusterSimFlags cluster_sim_flags;
  cli::add_cluster_sim_command(app, cluster_sim_flags);

  cli::CalibrateFlags calibrate_flags;
  cli::add_calibrate_command(app, calibrate_flags);

  cli::DeterminismFlags determinism_flags;
  cli::add_determinism_command(app, determinism_flags);

  CLI11_PARSE(app, argc, argv);
  if (auto st = core::set_log_level(log_level); !st) return cli::fail_with(st.error());
  experiment::set_data_dir(data_dir);

  if (*list) {
    cli::list_builtins();
    return 0;
  }
  if (*exp) {
    if (auto st = cli::run_experiment(exp_flags); !st) return cli::fail_with(st.error());
    return 0;
  }
  if (*mig_flags.command) {
    if (auto st = cli::run_mig_command(mig_flags); !st) return cli::fail_with(st.error());
    return 0;
  }
  if (*topology_flags.command) {
    if (auto st = cli::run_topology_command(topology_flags); !st) return cli::fail_with(st.error());
    return 0;
  }
  if (*extender_flags.command) {
    if (auto st = cli::run_extender_command(extender_flags); !st) return cli::fail_with(st.error());
    return 0;
  }
  if (*agent_flags.command) {
    if (auto st = cli::run_agent_command(agent_flags); !st) return cli::fail_with(st.error());
    return 0;
  }
  if (*calibrate_flags.command) return cli::run_calibrate_command(calibrate_flags);
  if (*cluster_sim_flags.command) {
    if (auto st = cli::run_cluster_sim_command(cluster_sim_flags); !st) {
      return cli::fail_with(st.error());
    }
    return 0;
  }
  if (*determinism_flags.command) return cli::run_determinism_command(determinism_flags);
  core::Result<scenario::Scenario> loaded =
      *demo ? scenario::parse_scenario(scenario::demo_scenario_yaml(),
                                       std::string(scenario::kDemoScenarioName), ".")
            : scenario::load_scenario(scenario_path);
  if (!loaded) return cli::fail_with(loaded.error());
  if (auto st = cli::run(std::move(*loaded), *demo ? demo_flags : sim_flags); !st) {
    return cli::fail_with(st.error());
  }
  return 0;
}
