#include "tessera/cli/mig_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/mig/sim_mig.hpp"
#include "tessera/cli/mig_nvml_run.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/mig_bound.hpp"
#include "tessera/experiment/mig_optimum.hpp"
#include "tessera/experiment/mig_studies.hpp"
#include "tessera/experiment/run.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/scheduler.hpp"
#include "tessera/mig/registry.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"
#include "tessera/mig/runtime/run_report.hpp"

namespace tessera::cli {

namespace {

using core::Result;
using mig::MemoryBreakdown;
using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

constexpr const char* kAgeingHelp =
    "time-fit: a job that has waited this long (e.g. 45min) is served before every job that has "
    "not; default 30min";
constexpr const char* kShareHelp =
    "time-fit: an instance may run two jobs at once under MPS, when the simulated GPU predicts "
    "that finishes sooner than separate slices (simulated backend only)";

// ---- tessera mig layouts -------------------------------------------------------------------

core::Status run_layouts(const MigFlags& f) {
  TESSERA_ASSIGN_OR_RETURN(const hw::MigGeometry g,
                           core::with_context(hw::find_mig_geometry(f.gpu), "--gpu"));
  TESSERA_ASSIGN_OR_RETURN(
      const mig::LayoutSpace space,
      core::with_context(mig::LayoutSpace::build(g, f.profiles), "--profiles"));
  const auto full = space.full_states();
  const std::int64_t fcr_empty = space.fcr(space.empty_state());
  if (f.json_path != "-") {
    fmt::print("MIG layouts of {}, profiles {}\n", g.gpu, fmt::join(space.profile_ids(), ", "));
    fmt::print("{:>6}  {:>6}  {:<4}  {}\n", "state", "fcr", "full", "layout");
    for (mig::StateId s = 0; s < space.size(); ++s) {
      fmt::print("{:>6}  {:>6}  {:<4}  {}\n", s, space.fcr(s), space.is_full(s) ? "yes" : "",
                 mig::describe(g, space.layout(s)));
    }
    fmt::print(
        "{} states, {} fully configured layouts, fcr(empty) = {}\n"
        "fcr(s): how many fully configured layouts (no instance can be added) are still "
        "reachable from s by creating instances\n",
        space.size(), full.size(), fcr_empty);
  }
  if (f.json_path.empty()) return {};
  json states = json::array();
  for (mig::StateId s = 0; s < space.size(); ++s) {
    states.push_back({{"id", s},
                      {"layout", mig::describe(g, space.layout(s))},
                      {"fcr", space.fcr(s)},
                      {"full", space.is_full(s)}});
  }
  const json out = {
      {"gpu", g.gpu},
      {"profiles", space.profile_ids()},
      {"states", std::move(states)},
      {"summary",
       {{"states", space.size()}, {"full_layouts", full.size()}, {"fcr_empty", fcr_empty}}}};
  return write_text(f.json_path, out.dump(2));
}

// ---- the job file and the run on the simulated GPU -----------------------------------------

struct Loaded {
  mig::JobsFile jobs;
  mig::Scheme scheme = mig::Scheme::kB;
  hw::GpuSpec spec;
  hw::MigGeometry geometry;
  // The simulated GPU's timings, shared by time-fit's predictions and the plan's bound.
  std::shared_ptr<sim::SliceCostModel> model;
};

Result<Loaded> load(const MigFlags& f) {
  Loaded out;
  TESSERA_ASSIGN_OR_RETURN(out.jobs, mig::load_jobs_file(f.jobs_path));
  if (!f.gpu.empty()) out.jobs.gpu = f.gpu;
  const std::string scheme = f.scheme.empty() ? out.jobs.scheme : f.scheme;
  TESSERA_ASSIGN_OR_RETURN(
      out.scheme,
      core::with_context(mig::parse_scheme(scheme), f.scheme.empty() ? f.jobs_path : "--scheme"));
  const std::string where = f.gpu.empty() ? f.jobs_path + ": gpu" : "--gpu";
  TESSERA_ASSIGN_OR_RETURN(out.spec, core::with_context(hw::find_gpu(out.jobs.gpu), where));
  TESSERA_ASSIGN_OR_RETURN(out.geometry,
                           core::with_context(hw::find_mig_geometry(out.jobs.gpu), where));
  out.model = std::make_shared<sim::SliceCostModel>(out.spec, out.geometry);
  return out;
}

// The manager's options for the scheme; static runs the best fully configured layout for the
// jobs, as the simulator finds it; time-fit predicts job times with the simulated GPU's kernel
// model.
Result<mig::ManagerOptions> manager_options(const Loaded& l, const MigFlags& f,
                                            std::string* static_layout) {
  const std::string& ageing = f.ageing;
  mig::ManagerOptions o;
  if (f.share && l.scheme != mig::Scheme::kTimeFit) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--share applies only to the time-fit scheme; this run's is {}",
                       mig::to_string(l.scheme));
  }
  if (l.scheme == mig::Scheme::kTimeFit) {
    o = experiment::time_fit_options(l.model, 0, 1, f.share);
  }
  o.scheme = l.scheme;
  if (!ageing.empty()) {
    if (l.scheme != mig::Scheme::kTimeFit) {
      return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                         "--ageing applies only to the time-fit scheme; this run's is {}",
                         mig::to_string(l.scheme));
    }
    TESSERA_ASSIGN_OR_RETURN(o.time_fit.ageing,
                             core::with_context(core::parse_duration(ageing), "--ageing"));
    if (o.time_fit.ageing <= 0) {
      return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                         "--ageing {}: need a positive duration", ageing);
    }
  }
  if (l.scheme == mig::Scheme::kStatic) {
    TESSERA_ASSIGN_OR_RETURN(const experiment::BestStatic best,
                             experiment::find_best_static(l.jobs));
    o.static_layout = best.layout;
    *static_layout = fmt::format(
        "{} (the best for these jobs of the {} sets of profiles that make a fully configured "
        "layout, simulated)",
        best.description, best.tried);
  }
  return o;
}

std::string placement_name(const hw::MigGeometry& g, int profile_id, int start) {
  const hw::MigProfile* p = g.find(profile_id);
  return fmt::format("{}@{}", p ? p->name : fmt::format("profile {}", profile_id), start);
}

std::string placement_name(const hw::MigGeometry& g, const mig::Placement& p) {
  return placement_name(g, p.profile_id, p.start);
}

// The run's reconfigurations and attempts in time order. At equal times: what ended (freeing
// its instance), then the reconfigurations, then the starts they made room for.
struct Event {
  core::Nanos at;
  int order;
  std::string text;
};

std::vector<Event> timeline(const mig::MigRunResult& r, const hw::MigGeometry& g) {
  std::vector<Event> out;
  for (const auto& e : r.reconfigurations) {
    std::string text =
        fmt::format("{:<13} {}", mig::to_string(e.kind), placement_name(g, e.created));
    if (!e.destroyed.empty()) {
      std::vector<std::string> names;
      for (const auto& d : e.destroyed) names.push_back(placement_name(g, d));
      text += fmt::format(" (destroying {})", fmt::join(names, ", "));
    }
    text += " for " + e.for_job;
    if (!e.error.empty()) text += " — refused, not created: " + e.error;
    out.push_back({e.at, 2, std::move(text)});
  }
  for (const auto& j : r.jobs) {
    for (const auto& a : j.attempts) {
      const std::string where = placement_name(g, a.profile_id, a.start);
      // A start beside another job follows that job's start at the same time.
      out.push_back({a.started, a.beside.empty() ? 3 : 4,
                     fmt::format("{:<13} {} on {}{}", "start", j.name, where,
                                 a.beside.empty() ? "" : " beside " + a.beside)});
      std::string end;
      if (a.early_restart) {
        end = fmt::format(
            "{:<13} {} on {} after {} iterations: predicted peak {:.2f} GiB does "
            "not fit",
            "early restart", j.name, where, a.iterations_done,
            static_cast<double>(a.predicted_peak_bytes) / kGiB);
      } else {
        end = fmt::format("{:<13} {} on {} after {} iterations", device::to_string(a.exit), j.name,
                          where, a.iterations_done);
      }
      out.push_back({a.ended, 0, std::move(end)});
    }
    if (!j.completed) {
      out.push_back({j.finished, 1, fmt::format("{:<13} {}: {}", "give up", j.name, j.reason)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.at != b.at ? a.at < b.at : a.order < b.order;
  });
  return out;
}

json timeline_json(const std::vector<Event>& events) {
  json out = json::array();
  for (const auto& e : events) {
    out.push_back({{"at_s", experiment::round6(core::to_seconds(e.at))}, {"event", e.text}});
  }
  return out;
}

std::string job_line(const workload::BatchJob& job, const mig::MigRunResult& r,
                     const hw::MigGeometry& g) {
  std::string starts = "-";
  for (const auto& outcome : r.jobs) {
    if (outcome.name == job.name && !outcome.attempts.empty()) {
      starts =
          placement_name(g, outcome.attempts.front().profile_id, outcome.attempts.front().start);
    }
  }
  const std::string estimate =
      job.estimated_peak_bytes > 0 ? mig::format_gib(job.estimated_peak_bytes) : "unknown";
  return fmt::format("{:<20} {:<10} {:>10}  {:<12} {}", job.name, workload::to_string(job.kind),
                     estimate, starts, job.description);
}

Result<mig::MigRunResult> simulate(const Loaded& l, const mig::ManagerOptions& options,
                                   const mig::ProgressFn& progress) {
  sim::Engine engine;
  sim::SimMigOptions device_options = experiment::study_device_options(l.jobs.seed);
  if (options.co_run) device_options.jobs_per_instance = 2;
  TESSERA_ASSIGN_OR_RETURN(auto device, sim::SimMig::create(engine, l.spec, device_options));
  return mig::run_jobs(*device, l.jobs.jobs, options, progress);
}

// What no MIG policy can beat on these jobs (experiment::mig_bound), on the plan's simulated
// device, with as many jobs to an instance as the plan runs.
Result<experiment::MigBound> plan_bound(const Loaded& l, const mig::ManagerOptions& options) {
  return experiment::mig_bound(l.jobs.jobs, l.geometry, *l.model, experiment::study_bound_costs(),
                               options.co_run ? 2 : 1);
}

// The best schedule a policy deciding at job ends can make on these jobs
// (experiment::mig_optimum), with as many jobs to an instance as the plan runs.
Result<experiment::MigOptimum> plan_optimum(const Loaded& l, const mig::ManagerOptions& options) {
  return experiment::mig_optimum(l.jobs.jobs, l.geometry, *l.model, experiment::study_bound_costs(),
                                 options.co_run ? 2 : 1);
}

// ---- tessera mig plan ----------------------------------------------------------------------

core::Status run_plan(const MigFlags& f) {
  TESSERA_ASSIGN_OR_RETURN(const Loaded l, load(f));
  std::string static_layout;
  TESSERA_ASSIGN_OR_RETURN(const mig::ManagerOptions options,
                           manager_options(l, f, &static_layout));
  TESSERA_ASSIGN_OR_RETURN(const mig::MigRunResult r, simulate(l, options, {}));
  TESSERA_ASSIGN_OR_RETURN(const experiment::MigBound bound, plan_bound(l, options));
  TESSERA_ASSIGN_OR_RETURN(const experiment::MigOptimum best, plan_optimum(l, options));
  const auto events = timeline(r, l.geometry);

  if (f.json_path != "-") {
    fmt::print("Plan for {}: {} jobs on {}, scheme {} (simulated; no GPU is touched)\n",
               f.jobs_path, l.jobs.jobs.size(), l.spec.name, mig::to_string(l.scheme));
    if (!static_layout.empty()) fmt::print("static layout: {}\n", static_layout);
    fmt::print("\n{:<20} {:<10} {:>10}  {:<12} {}\n", "job", "kind", "estimate", "starts on",
               "what");
    for (const auto& job : l.jobs.jobs) {
      fmt::print("{}\n", job_line(*job, r, l.geometry));
      if (auto b = l.jobs.breakdowns.find(job->name); b != l.jobs.breakdowns.end()) {
        fmt::print("{:<20} estimate: {}\n", "", b->second.describe());
      }
    }
    fmt::print("\nThe run as the simulator predicts it:\n{:>10}  {}\n", "time s", "event");
    for (const auto& e : events) {
      fmt::print("{:>10.3f}  {}\n", core::to_seconds(e.at), e.text);
    }
    fmt::print(
        "\n{}/{} jobs completed; restarts: {} out of memory, {} early; makespan {:.1f} s; "
        "energy {:.1f} kJ; {:.1f} jobs/h\n",
        r.completed(), r.jobs.size(), r.oom_restarts, r.early_restarts,
        core::to_seconds(r.makespan), r.energy_joules / 1e3, r.jobs_per_hour());
    if (bound.makespan > 0) {
      fmt::print(
          "bound: no MIG policy{} finishes these jobs before {:.1f} s ({:.1f} jobs/h), set "
          "by {}\n",
          options.co_run ? " with two jobs to an instance" : "", core::to_seconds(bound.makespan),
          bound.jobs_per_hour, bound.binding);
    }
    const std::string_view per_instance = options.co_run ? " with two jobs to an instance" : "";
    if (!best.not_searched.empty()) {
      fmt::print("best schedule deciding at job ends{}: not searched ({})\n", per_instance,
                 best.not_searched);
    } else {
      fmt::print("best schedule deciding at job ends{}: {:.1f} s ({:.1f} jobs/h), {}:\n",
                 per_instance, core::to_seconds(best.makespan), best.jobs_per_hour,
                 best.complete ? "every schedule searched"
                               : "the best found, not every schedule searched");
      for (const std::string& d : best.decisions) fmt::print("  {}\n", d);
    }
  }
  if (f.json_path.empty()) return {};
  json jobs = json::array();
  for (const auto& job : l.jobs.jobs) {
    json j = {{"name", job->name},
              {"kind", workload::to_string(job->kind)},
              {"description", job->description},
              {"estimate_gib",
               experiment::round6(static_cast<double>(job->estimated_peak_bytes) / kGiB)}};
    if (auto b = l.jobs.breakdowns.find(job->name); b != l.jobs.breakdowns.end()) {
      const MemoryBreakdown& m = b->second;
      json parts = json::object();
      for (const auto& [name, bytes] :
           {std::pair{"weights", m.weights}, std::pair{"gradients", m.gradients},
            std::pair{"optimizer_state", m.optimizer_state},
            std::pair{"activations", m.activations}, std::pair{"kv_cache", m.kv_cache},
            std::pair{"workspace", m.workspace},
            std::pair{"framework_context", m.framework_context}}) {
        parts[name] = experiment::round6(static_cast<double>(bytes) / kGiB);
      }
      j["estimate_breakdown_gib"] = std::move(parts);
    }
    jobs.push_back(std::move(j));
  }
  const json out = {{"jobs_file", f.jobs_path},
                    {"scheme", mig::to_string(l.scheme)},
                    {"static_layout", static_layout},
                    {"jobs", std::move(jobs)},
                    {"timeline", timeline_json(events)},
                    {"predicted", mig::run_report_json(r, l.geometry)},
                    {"bound",
                     {{"makespan_s", core::to_seconds(bound.makespan)},
                      {"jobs_per_hour", bound.jobs_per_hour},
                      {"binding", bound.binding},
                      {"jobs_per_instance", options.co_run ? 2 : 1}}},
                    {"optimum", experiment::optimum_json(best)}};
  return write_text(f.json_path, out.dump(2));
}

// ---- tessera mig run -----------------------------------------------------------------------

Outcome run_run(const MigFlags& f) {
  if (f.dry_run) return run_plan(f);
  if (f.share && f.backend != "sim") {
    return core::failf(core::Domain::kConfig, core::Code::kUnsupported,
                       "--share needs --backend sim: the {} backend runs one job to an instance",
                       f.backend);
  }
  TESSERA_ASSIGN_OR_RETURN(const Loaded l, load(f));
  std::string static_layout;
  TESSERA_ASSIGN_OR_RETURN(const mig::ManagerOptions options,
                           manager_options(l, f, &static_layout));

  ProgressLine progress(!f.quiet);
  const auto on_progress = [&progress](const mig::Progress& p) {
    progress.update("jobs finished", p.finished, p.total, p.now);
  };
  Result<mig::MigRunResult> result;
  int stop_signal = 0;
  std::string journal;
  if (f.backend == "sim") {
    result = simulate(l, options, on_progress);
  } else {
    auto nvml = run_on_nvml({.jobs_path = f.jobs_path,
                             .jobs = &l.jobs,
                             .gpu = l.spec.name,
                             .nvml_device = f.nvml_device,
                             .journal_path = f.journal,
                             .options = options,
                             .progress = on_progress});
    if (nvml) {
      result = std::move(nvml->result);
      stop_signal = nvml->stop_signal;
      journal = nvml->journal_path;
    } else {
      result = std::unexpected(nvml.error());
    }
  }
  progress.finish();
  if (!result) return std::unexpected(result.error());
  const hw::MigGeometry& geometry = l.geometry;

  if (f.json_path != "-") {
    fmt::print("{}: {} jobs on {} ({}), scheme {}\n", f.jobs_path, result->jobs.size(), l.spec.name,
               f.backend == "sim" ? "simulator" : "NVML", mig::to_string(l.scheme));
    if (!static_layout.empty()) fmt::print("static layout: {}\n", static_layout);
    fmt::print("{}", mig::run_report_table(*result, geometry));
  }
  if (!f.json_path.empty()) {
    json out = mig::run_report_json(*result, geometry);
    out["backend"] = f.backend;
    out["jobs_file"] = f.jobs_path;
    TESSERA_TRY(write_text(f.json_path, out.dump(2)));
  }
  if (result->stopped.empty()) return {};
  // 128 + the signal, as a shell reports a process the signal ended.
  const auto unfinished =
      std::ranges::count_if(result->jobs, [](const mig::JobOutcome& j) { return !j.resolved; });
  return Outcome::failure(
      core::Error(core::Domain::kMig, core::Code::kFailedPrecondition,
                  fmt::format("stopped by {}: {} job{} did not finish; the same command runs "
                              "them (journal {})",
                              result->stopped, unfinished, unfinished == 1 ? "" : "s", journal)),
      128 + stop_signal);
}

}  // namespace

void add_mig_options(CLI::App& command, MigFlags& f) {
  command.require_subcommand(1);

  f.layouts = command.add_subcommand(
      "layouts",
      "List every valid MIG layout of a GPU (a set of placed GPU instances) with its "
      "reachability score fcr: how many fully configured layouts can still be reached from it");
  f.layouts->add_option("--gpu", f.gpu, "MIG-capable GPU, e.g. a100-40gb, H100-SXM5-80GB")
      ->required();
  f.layouts
      ->add_option("--profiles", f.profiles,
                   "Only these GPU-instance profile IDs, e.g. 19,14,9,5,0 (default: every "
                   "profile without media extensions)")
      ->delimiter(',');
  f.layouts->add_option("--json", f.json_path,
                        "Write the states as JSON to this file ('-' for stdout)");

  f.plan = command.add_subcommand(
      "plan",
      "Show what a job file would do, without touching a GPU: each job's memory estimate and the "
      "slice it starts on, then the run as the simulated MIG GPU predicts it (reconfigurations "
      "by place, fusion, fission or reuse; attempts and restarts; makespan; energy)");
  f.plan->add_option("JOBS", f.jobs_path, "Job file (JOBS.yaml; docs/mig.md)")->required();
  f.plan->add_option(
      "--scheme", f.scheme,
      fmt::format("{} (`tessera list`); default: the job file's", mig::scheme_names()));
  f.plan->add_option("--gpu", f.gpu, "Override the job file's GPU, e.g. a100-80gb");
  f.plan->add_option("--ageing", f.ageing, kAgeingHelp);
  f.plan->add_flag("--share", f.share, kShareHelp);
  f.plan->add_option("--json", f.json_path, "Write the plan as JSON to this file ('-' for stdout)");

  f.run = command.add_subcommand(
      "run",
      "Run a job file to the end on a simulated MIG GPU (--backend sim) or a real one through "
      "NVML (--backend nvml): every job completes or is reported with the reason it cannot run");
  f.run->add_option("JOBS", f.jobs_path, "Job file (JOBS.yaml; docs/mig.md)")->required();
  f.run->add_option("--backend", f.backend, "sim (tessera's simulated MIG GPU) or nvml")
      ->check(CLI::IsMember({"sim", "nvml"}))
      ->capture_default_str();
  f.run->add_option(
      "--scheme", f.scheme,
      fmt::format("{} (`tessera list`); default: the job file's", mig::scheme_names()));
  f.run->add_option("--gpu", f.gpu, "Override the job file's GPU");
  f.run->add_option("--ageing", f.ageing, kAgeingHelp);
  f.run->add_flag("--share", f.share, kShareHelp);
  f.run->add_flag("--dry-run", f.dry_run,
                  "Print the plan (as `tessera mig plan`) and touch nothing");
  f.run->add_option("--nvml-device", f.nvml_device, "NVML device index (--backend nvml)")
      ->capture_default_str();
  f.run->add_option("--journal", f.journal,
                    "Where the run records what it has started and finished, so that a run "
                    "after a crash cleans up and finishes the rest (--backend nvml; default "
                    "$XDG_STATE_HOME/tessera/mig-gpu<N>.journal, else under ~/.local/state)");
  f.run->add_option("--json", f.json_path,
                    "Write the result as JSON to this file ('-' for stdout)");
  f.run->add_flag("-q,--quiet", f.quiet, "No progress line");
}

Outcome run_mig_command(const MigFlags& f) {
  if (*f.layouts) return run_layouts(f);
  if (*f.plan) return run_plan(f);
  if (*f.run) return run_run(f);
  // CLI11 requires one of them, so this is reached only if a subcommand is added and not here.
  return core::fail(core::Domain::kMig, core::Code::kInvalidArgument,
                    "name a mig command: layouts, plan or run");
}

}  // namespace tessera::cli
