#include "tessera/experiment/mig_studies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/internal/scenario_files.hpp"
#include "tessera/experiment/mig_trace_mix.hpp"
#include "tessera/experiment/run.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/predictor_replay.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"
#include "tessera/mig/runtime/run_report.hpp"

namespace tessera::experiment {

namespace {

using core::Result;
using nlohmann::json;

constexpr std::size_t kWrap = 100;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Metric counter_metric(std::string_view name, bool lower_is_better) {
  return Metric{.quantity = Quantity::kCounter,
                .tenant = "",
                .counter = std::string(name),
                .counter_lower_is_better = lower_is_better};
}

std::string source_name(const std::string& file) {
  return "examples/mig/experiments/" + file + " (built in)";
}

struct Mix {
  mig::JobsFile jobs;
  hw::GpuSpec spec;
  hw::MigGeometry geometry;
};

Result<Mix> load_mix(mig::JobsFile jobs) {
  TESSERA_ASSIGN_OR_RETURN(hw::GpuSpec spec, hw::find_gpu(jobs.gpu));
  TESSERA_ASSIGN_OR_RETURN(hw::MigGeometry geometry, hw::find_mig_geometry(jobs.gpu));
  return Mix{.jobs = std::move(jobs), .spec = std::move(spec), .geometry = std::move(geometry)};
}

struct Simulated {
  mig::MigRunResult result;
  hw::MigGeometry geometry;  // the simulated device's (whole_gpu: one "full" profile)
};

Result<Simulated> simulate(const Mix& mix, const mig::ManagerOptions& manager, bool whole_gpu,
                           int jobs_per_instance = 1) {
  sim::Engine engine;
  sim::SimMigOptions device_options = study_device_options(mix.jobs.seed);
  device_options.whole_gpu = whole_gpu;
  device_options.jobs_per_instance = jobs_per_instance;
  TESSERA_ASSIGN_OR_RETURN(auto device, sim::SimMig::create(engine, mix.spec, device_options));
  TESSERA_ASSIGN_OR_RETURN(mig::MigRunResult result,
                           mig::run_jobs(*device, mix.jobs.jobs, manager));
  return Simulated{.result = std::move(result), .geometry = device->geometry()};
}

// Completed jobs' turnaround, mean and max, in seconds.
std::pair<double, double> turnaround_s(const mig::MigRunResult& r) {
  double sum = 0, max = 0;
  std::int64_t n = 0;
  for (const auto& j : r.jobs) {
    if (!j.completed) continue;
    const double t = core::to_seconds(j.turnaround());
    sum += t;
    max = std::max(max, t);
    ++n;
  }
  return {n > 0 ? sum / static_cast<double>(n) : 0.0, max};
}

metrics::ModeReport row_report(const PolicyRun& run) {
  const auto& r = run.result;
  const auto [mean, max] = turnaround_s(r);
  metrics::ModeReport m;
  m.mode = run.row;
  m.simulated = r.makespan;
  m.device.energy_joules = r.energy_joules;
  m.counters = {{std::string(kJobsPerHour), r.jobs_per_hour()},
                {std::string(kEnergyKj), r.energy_joules / 1e3},
                {std::string(kMeanTurnaround), mean},
                {std::string(kMaxTurnaround), max},
                {std::string(kRestarts), static_cast<double>(r.oom_restarts + r.early_restarts)},
                {std::string(kCompleted), static_cast<double>(r.completed())},
                {std::string(kMaxWait), core::to_seconds(r.longest_wait())}};
  return m;
}

// Better static layout: more jobs completed, then a shorter makespan (ties keep the earlier).
bool better_static(const mig::MigRunResult& a, const mig::MigRunResult& b) {
  if (a.completed() != b.completed()) return a.completed() > b.completed();
  return a.makespan < b.makespan;
}

std::string figure(double x) {
  return fmt::format("{:.4g}", x);
}

std::string ratio_cell(const metrics::RunReport& report, const Metric& metric,
                       const std::string& row, std::string_view baseline) {
  auto v = improvement(report, metric, row, std::string(baseline), Form::kTimes);
  return v ? fmt::format("{:.3g}x", *v) : "-";
}

std::string counter_cell(const metrics::ModeReport& m, std::string_view name) {
  for (const auto& [key, value] : m.counters) {
    if (key == name) return figure(value);
  }
  return "-";
}

// The bounds and the best schedules a policy can make, over sequential and over the best static
// layout, with what sets each bound and how each best schedule runs. Four figures, so that a ratio
// just under a goal is not rounded onto it.
std::string bound_line(const MixResult& mix) {
  auto over = [&](double jobs_per_hour, std::string_view row) -> std::string {
    auto v = metric_value(mix.report, mig_throughput(), row);
    return v && *v > 0 ? fmt::format("{:.4g}x", jobs_per_hour / *v) : "-";
  };
  auto figures = [&](core::Nanos makespan, double jobs_per_hour) {
    return fmt::format("{:.4g} s ({:.4g} jobs/h, {} sequential, {} best-static)",
                       core::to_seconds(makespan), jobs_per_hour,
                       over(jobs_per_hour, kSequentialRow), over(jobs_per_hour, kBestStaticRow));
  };
  auto line = [&](std::string_view head, const MigBound& b) {
    return wrap(fmt::format("{} before {}, set by {}.", head, figures(b.makespan, b.jobs_per_hour),
                            b.binding),
                kWrap) +
           "\n";
  };
  auto best = [&](std::string_view head, const MigOptimum& o) {
    if (!o.not_searched.empty()) {
      return wrap(fmt::format("{}: not searched ({}).", head, o.not_searched), kWrap) + "\n";
    }
    std::string out =
        wrap(fmt::format("{}: {}, {} ({} step{}):", head, figures(o.makespan, o.jobs_per_hour),
                         o.complete ? "every schedule searched"
                                    : "the best found, not every schedule searched",
                         o.steps, o.steps == 1 ? "" : "s"),
             kWrap) +
        "\n";
    for (const std::string& d : o.decisions) out += "  " + d + "\n";
    return out;
  };
  return line("bound: no MIG layout with one job to an instance finishes these jobs", mix.bound) +
         line("bound with two jobs to an instance (time-fit-share): none finishes them",
              mix.shared_bound) +
         best("best schedule deciding at job ends, one job to an instance", mix.optimum) +
         best("best schedule deciding at job ends, two jobs to an instance", mix.shared_optimum);
}

std::string format_mix(const MixResult& mix) {
  std::vector<std::vector<std::string>> rows{
      {"policy", std::string(kCompleted), std::string(kJobsPerHour), std::string(kEnergyKj),
       std::string(kMeanTurnaround), std::string(kMaxTurnaround), std::string(kMaxWait),
       std::string(kRestarts), "thr x seq", "energy x seq", "thr x static", "energy x static"}};
  for (const auto& m : mix.report.modes) {
    rows.push_back({m.mode, fmt::format("{}/{}", counter_cell(m, kCompleted), mix.jobs),
                    counter_cell(m, kJobsPerHour), counter_cell(m, kEnergyKj),
                    counter_cell(m, kMeanTurnaround), counter_cell(m, kMaxTurnaround),
                    counter_cell(m, kMaxWait), counter_cell(m, kRestarts),
                    ratio_cell(mix.report, mig_throughput(), m.mode, kSequentialRow),
                    ratio_cell(mix.report, mig_energy(), m.mode, kSequentialRow),
                    ratio_cell(mix.report, mig_throughput(), m.mode, kBestStaticRow),
                    ratio_cell(mix.report, mig_energy(), m.mode, kBestStaticRow)});
  }
  std::string out = fmt::format("\n== {}: {} job{} on {} (simulator), seed {} ==\n", mix.file,
                                mix.jobs, mix.jobs == 1 ? "" : "s", mix.gpu, mix.seed);
  out += align_columns(rows);
  for (const auto& run : mix.runs) {
    if (!run.detail.empty()) {
      out += fmt::format(
          "{}: {} (the best of the {} sets of profiles that make a fully configured layout)\n",
          run.row, run.detail, mix.static_layouts_tried);
    }
  }
  out += bound_line(mix);
  if (!mix.claims.empty()) out += "\n" + format_claims(mix.claims);
  return out;
}

std::string format_cases(const std::vector<PredictorCase>& cases) {
  auto iteration = [](const std::optional<std::int64_t>& i) {
    return i ? fmt::format("{}", *i) : std::string("never");
  };
  std::vector<std::vector<std::string>> rows{
      {"job", "slice", "iterations", "peak GiB", "declared", "oom at", "alarm at", "verdict",
       "linear-only alarm at", "first attempt in a simulated run"}};
  for (const auto& c : cases) {
    std::string verdict;
    if (!c.oom) {
      verdict = c.alarm ? "false alarm" : "fits, no alarm";
    } else if (c.alarm && *c.alarm < *c.oom) {
      verdict = fmt::format("in time ({} iterations early)", *c.oom - *c.alarm);
    } else {
      verdict = "missed: runs out of memory first";
    }
    rows.push_back({c.job, fmt::format("{} ({:.3g} GiB)", c.profile, c.slice_bytes / kGiB),
                    fmt::format("{}", c.iterations), fmt::format("{:.3g}", c.peak_bytes / kGiB),
                    c.declared ? "yes" : "no", iteration(c.oom), iteration(c.alarm), verdict,
                    iteration(c.alarm_linear_only), c.in_run});
  }
  return align_columns(rows);
}

json bound_json(const MigBound& b) {
  return {{"makespan_s", round6(core::to_seconds(b.makespan))},
          {"jobs_per_hour", round6(b.jobs_per_hour)},
          {"binding", b.binding}};
}

json mix_json(const MixResult& mix) {
  json policies = json::array();
  for (std::size_t i = 0; i < mix.runs.size(); ++i) {
    const auto& run = mix.runs[i];
    json figures = json::object();
    for (const auto& [key, value] : mix.report.modes[i].counters) figures[key] = round6(value);
    json ratios = json::object();
    for (const auto baseline : {kSequentialRow, kBestStaticRow}) {
      for (const auto& [name, metric] :
           {std::pair{"throughput", mig_throughput()}, std::pair{"energy", mig_energy()}}) {
        auto v = improvement(mix.report, metric, run.row, std::string(baseline), Form::kTimes);
        ratios[fmt::format("{}_x_{}", name, baseline)] = v ? json(round6(*v)) : json(nullptr);
      }
    }
    policies.push_back({{"policy", run.row},
                        {"layout", run.detail},
                        {"figures", std::move(figures)},
                        {"ratios", std::move(ratios)},
                        {"run", mig::run_report_json(run.result, run.geometry)}});
  }
  json claims = json::array();
  for (const auto& c : mix.claims) claims.push_back(claim_json(c));
  return {{"file", mix.file},
          {"gpu", mix.gpu},
          {"seed", mix.seed},
          {"jobs", mix.jobs},
          {"static_layouts_tried", mix.static_layouts_tried},
          {"bound", bound_json(mix.bound)},
          {"shared_bound", bound_json(mix.shared_bound)},
          {"optimum", optimum_json(mix.optimum)},
          {"shared_optimum", optimum_json(mix.shared_optimum)},
          {"policies", std::move(policies)},
          {"claims", std::move(claims)}};
}

json case_json(const PredictorCase& c) {
  auto iteration = [](const std::optional<std::int64_t>& i) {
    return i ? json(*i) : json(nullptr);
  };
  return {{"job", c.job},
          {"description", c.description},
          {"profile", c.profile},
          {"slice_gib", round6(static_cast<double>(c.slice_bytes) / kGiB)},
          {"iterations", c.iterations},
          {"peak_gib", round6(static_cast<double>(c.peak_bytes) / kGiB)},
          {"declared", c.declared},
          {"alarm_iteration", iteration(c.alarm)},
          {"linear_only_alarm_iteration", iteration(c.alarm_linear_only)},
          {"first_attempt_in_run", c.in_run},
          {"oom_iteration", iteration(c.oom)}};
}

}  // namespace

nlohmann::json optimum_json(const MigOptimum& o) {
  if (!o.not_searched.empty()) return {{"not_searched", o.not_searched}};
  return {{"makespan_s", round6(core::to_seconds(o.makespan))},
          {"jobs_per_hour", round6(o.jobs_per_hour)},
          {"complete", o.complete},
          {"steps", o.steps},
          {"decisions", o.decisions}};
}

Metric mig_throughput() {
  return counter_metric(kJobsPerHour, false);
}

Metric mig_energy() {
  return counter_metric(kEnergyKj, true);
}

sim::SimMigOptions study_device_options(std::uint64_t seed) {
  sim::SimMigOptions o;
  o.seed = seed;
  return o;
}

MigBoundCosts study_bound_costs() {
  const sim::SimMigOptions device = study_device_options(1);
  return {.create_time = device.create_time,
          .start_time = device.job_start_time,
          .destroy_time = device.destroy_time};
}

mig::ManagerOptions time_fit_options(std::shared_ptr<sim::SliceCostModel> model,
                                     double prediction_error, std::uint64_t seed, bool share) {
  const sim::SimMigOptions device = study_device_options(1);
  mig::ManagerOptions o;
  o.scheme = mig::Scheme::kTimeFit;
  o.job_time = [model, prediction_error, streams = core::RandomStreams(seed)](
                   const workload::BatchJob& job,
                   const hw::MigProfile& p) -> core::Result<core::Nanos> {
    TESSERA_ASSIGN_OR_RETURN(const core::Nanos t, model->job_time(job, p));
    if (prediction_error <= 0) return t;
    core::RandomStream error = streams.stream(fmt::format("time-fit error/{}/{}", job.name, p.id));
    return core::round_to_nanos(static_cast<double>(t) *
                                std::exp(error.normal(0, prediction_error)));
  };
  o.time_fit.create_time = device.create_time;
  o.time_fit.destroy_time = device.destroy_time;
  o.time_fit.start_time = device.job_start_time;
  if (share) {
    o.co_run = [model, prediction_error, streams = core::RandomStreams(seed)](
                   const workload::BatchJob& a, const workload::BatchJob& b,
                   const hw::MigProfile& p) -> core::Result<std::pair<double, double>> {
      TESSERA_ASSIGN_OR_RETURN(const sim::CoRunCost c, model->co_run(a, b, p));
      if (prediction_error <= 0) return std::pair{c.slowdown_a, c.slowdown_b};
      core::RandomStream error =
          streams.stream(fmt::format("time-fit co-run error/{}/{}/{}", a.name, b.name, p.id));
      const double ea = std::exp(error.normal(0, prediction_error));
      const double eb = std::exp(error.normal(0, prediction_error));
      return std::pair{c.slowdown_a * ea, c.slowdown_b * eb};
    };
  }
  return o;
}

Result<BestStatic> find_best_static(const mig::JobsFile& jobs) {
  TESSERA_ASSIGN_OR_RETURN(const Mix mix, load_mix(jobs));
  TESSERA_ASSIGN_OR_RETURN(const mig::LayoutSpace space, mig::LayoutSpace::build(mix.geometry));
  std::optional<BestStatic> best;
  std::size_t tried = 0;
  // Layouts with the same profiles at other placements run the same: an instance is timed by its
  // profile alone, so each set of profiles is simulated once, at its lowest state id.
  std::set<std::vector<int>> seen;
  for (const mig::StateId s : space.full_states()) {
    std::vector<int> profiles;
    for (const auto& p : space.layout(s).instances) profiles.push_back(p.profile_id);
    std::ranges::sort(profiles);
    if (!seen.insert(profiles).second) continue;
    mig::ManagerOptions manager;
    manager.scheme = mig::Scheme::kStatic;
    manager.static_layout = space.layout(s);
    TESSERA_ASSIGN_OR_RETURN(Simulated r, simulate(mix, manager, false));
    ++tried;
    if (!best || better_static(r.result, best->run)) {
      best = BestStatic{.layout = space.layout(s),
                        .description = mig::describe(mix.geometry, space.layout(s)),
                        .tried = 0,
                        .run = std::move(r.result)};
    }
  }
  if (!best) {
    return core::failf(core::Domain::kMig, core::Code::kInternal,
                       "{} has no fully configured MIG layout", mix.geometry.gpu);
  }
  best->tried = tried;
  return std::move(*best);
}

Result<MixResult> run_mix(std::string_view text, const std::string& file,
                          const std::vector<Claim>& claims, const MigStudyOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(mig::JobsFile jobs, mig::parse_jobs(text, source_name(file)));
  if (options.seed) jobs.seed = *options.seed;
  TESSERA_ASSIGN_OR_RETURN(const Mix mix, load_mix(std::move(jobs)));
  MixResult out;
  out.file = file;
  out.gpu = mix.spec.name;
  out.seed = mix.jobs.seed;
  out.jobs = mix.jobs.jobs.size();
  constexpr std::int64_t kRuns = 9;
  std::int64_t done = 0;
  auto step = [&](std::string_view what) {
    if (options.progress) options.progress(++done, kRuns, what);
  };

  mig::ManagerOptions sequential;
  sequential.scheme = mig::Scheme::kSequential;
  TESSERA_ASSIGN_OR_RETURN(Simulated seq, simulate(mix, sequential, true));
  out.runs.push_back({.row = std::string(kSequentialRow),
                      .detail = "",
                      .result = std::move(seq.result),
                      .geometry = std::move(seq.geometry)});
  step(kSequentialRow);

  TESSERA_ASSIGN_OR_RETURN(BestStatic stat, find_best_static(mix.jobs));
  out.static_layouts_tried = stat.tried;
  out.runs.push_back({.row = std::string(kBestStaticRow),
                      .detail = stat.description,
                      .result = std::move(stat.run),
                      .geometry = mix.geometry});
  step(kBestStaticRow);

  struct Scheme {
    std::string_view row;
    mig::Scheme scheme;
    bool early_restart;
  };
  for (const Scheme& s : std::array<Scheme, 3>{{{kSchemeARow, mig::Scheme::kA, true},
                                                {kSchemeBRow, mig::Scheme::kB, true},
                                                {kSchemeBNoEarlyRow, mig::Scheme::kB, false}}}) {
    mig::ManagerOptions manager;
    manager.scheme = s.scheme;
    manager.early_restart = s.early_restart;
    TESSERA_ASSIGN_OR_RETURN(Simulated r, simulate(mix, manager, false));
    out.runs.push_back({.row = std::string(s.row),
                        .detail = "",
                        .result = std::move(r.result),
                        .geometry = std::move(r.geometry)});
    step(s.row);
  }

  // One model for time-fit's predictions and the bound: each job is timed on each profile once.
  const auto model = std::make_shared<sim::SliceCostModel>(mix.spec, mix.geometry);
  struct TimeFit {
    std::string_view row;
    double error;
    int jobs_per_instance;
  };
  for (const TimeFit& t : std::array<TimeFit, 4>{{{kTimeFitRow, 0.0, 1},
                                                  {kTimeFitErrorRow, 0.2, 1},
                                                  {kTimeFitShareRow, 0.0, 2},
                                                  {kTimeFitShareErrorRow, 0.2, 2}}}) {
    const std::string_view row = t.row;
    TESSERA_ASSIGN_OR_RETURN(
        Simulated fit,
        simulate(mix, time_fit_options(model, t.error, mix.jobs.seed, t.jobs_per_instance > 1),
                 false, t.jobs_per_instance));
    out.runs.push_back({.row = std::string(row),
                        .detail = "",
                        .result = std::move(fit.result),
                        .geometry = std::move(fit.geometry)});
    step(row);
  }
  const MigBoundCosts costs = study_bound_costs();
  TESSERA_ASSIGN_OR_RETURN(out.bound, mig_bound(mix.jobs.jobs, mix.geometry, *model, costs, 1));
  TESSERA_ASSIGN_OR_RETURN(out.shared_bound,
                           mig_bound(mix.jobs.jobs, mix.geometry, *model, costs, 2));
  TESSERA_ASSIGN_OR_RETURN(out.optimum, mig_optimum(mix.jobs.jobs, mix.geometry, *model, costs, 1));
  TESSERA_ASSIGN_OR_RETURN(out.shared_optimum,
                           mig_optimum(mix.jobs.jobs, mix.geometry, *model, costs, 2));

  out.report.scenario = file;
  out.report.gpu = mix.spec.name;
  out.report.seed = mix.jobs.seed;
  for (const auto& run : out.runs) out.report.modes.push_back(row_report(run));
  for (const auto& c : claims) out.claims.push_back(evaluate(out.report, c));
  return out;
}

namespace {

// The job alone under scheme B on the simulated GPU: how its first attempt ended.
Result<std::string> first_attempt(const mig::JobsFile& jobs, const workload::BatchJobPtr& job) {
  mig::JobsFile alone = jobs;
  alone.jobs = {job};
  TESSERA_ASSIGN_OR_RETURN(const Mix mix, load_mix(std::move(alone)));
  TESSERA_ASSIGN_OR_RETURN(const Simulated run, simulate(mix, mig::ManagerOptions{}, false));
  const auto& attempts = run.result.jobs.front().attempts;
  if (attempts.empty()) return std::string("never started");
  const mig::Attempt& a = attempts.front();
  if (a.early_restart) return fmt::format("early restart at {}", a.iterations_done);
  return fmt::format("{} at {}", device::to_string(a.exit), a.iterations_done);
}

}  // namespace

Result<std::vector<PredictorCase>> run_predictor_cases(std::string_view text,
                                                       const std::string& file) {
  TESSERA_ASSIGN_OR_RETURN(const mig::JobsFile jobs, mig::parse_jobs(text, source_name(file)));
  TESSERA_ASSIGN_OR_RETURN(const hw::MigGeometry geometry, hw::find_mig_geometry(jobs.gpu));
  std::vector<PredictorCase> out;
  for (const auto& job : jobs.jobs) {
    const hw::MigProfile* slice = geometry.smallest_with_memory(job->estimated_peak_bytes);
    if (job->estimated_peak_bytes <= 0 || slice == nullptr) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "{}: job '{}' needs an `estimate` that some {} profile holds, to pick the "
                         "slice it starts on",
                         source_name(file), job->name, geometry.gpu);
    }
    PredictorCase c;
    c.job = job->name;
    c.description = job->description;
    c.profile = slice->name;
    c.slice_bytes = slice->memory_bytes;
    c.iterations = job->iterations;
    c.peak_bytes = job->memory.peak_reserved(job->iterations);
    c.declared = !job->declared_steps.empty();
    // Samples carry the simulated device's noise, as the manager would see them.
    const sim::SimMigOptions device = study_device_options(jobs.seed);
    auto alarm = [&](bool linear_only) -> std::optional<std::int64_t> {
      mig::PredictorOptions predictor;
      predictor.linear_only = linear_only;
      const std::int64_t at = mig::first_alarm_iteration(
          job->memory, job->iterations, job->declared_steps, slice->memory_bytes, predictor,
          device.sample_noise, device.seed);
      if (at < 0) return std::nullopt;
      return at;
    };
    c.alarm = alarm(false);
    c.alarm_linear_only = alarm(true);
    TESSERA_ASSIGN_OR_RETURN(c.in_run, first_attempt(jobs, job));
    const std::int64_t oom =
        job->memory.first_iteration_above(slice->memory_bytes, job->iterations);
    if (oom >= 0) c.oom = oom;
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::string_view> mig_file_text(std::string_view file) {
  for (const auto& f : embedded_mig_files()) {
    if (f.file == file) return f.text;
  }
  return core::failf(core::Domain::kMig, core::Code::kNotFound,
                     "examples/mig/experiments/{} is not built in; add it to "
                     "TESSERA_MIG_EXPERIMENT_FILES in src/tessera/experiment/CMakeLists.txt",
                     file);
}

Result<MigExperimentResult> run_mig_experiment(const MigExperiment& e,
                                               const MigStudyOptions& options) {
  MigExperimentResult out{.experiment = &e, .mixes = {}, .cases = {}};
  if (e.trace) {
    const std::string where = fmt::format("experiment '{}'", e.name);
    TESSERA_ASSIGN_OR_RETURN(
        const std::string text,
        core::with_context(trace_mix_text(TraceMixOptions{.seed = options.seed.value_or(1)}),
                           where));
    TESSERA_ASSIGN_OR_RETURN(
        MixResult mix, core::with_context(run_mix(text, "trace mix", e.claims, options), where));
    out.mixes.push_back(std::move(mix));
  }
  for (const auto& file : e.files) {
    const std::string where = fmt::format("experiment '{}'", e.name);
    TESSERA_ASSIGN_OR_RETURN(const std::string_view text,
                             core::with_context(mig_file_text(file), where));
    if (e.predictor) {
      TESSERA_ASSIGN_OR_RETURN(auto cases,
                               core::with_context(run_predictor_cases(text, file), where));
      out.cases.insert(out.cases.end(), cases.begin(), cases.end());
      continue;
    }
    MigStudyOptions mix_options = options;
    if (options.progress) {
      mix_options.progress = [&](std::int64_t done, std::int64_t total, std::string_view what) {
        options.progress(done, total, fmt::format("{}: {}", file, what));
      };
    }
    TESSERA_ASSIGN_OR_RETURN(MixResult mix,
                             core::with_context(run_mix(text, file, e.claims, mix_options), where));
    out.mixes.push_back(std::move(mix));
  }
  return out;
}

std::string format_result(const MigExperimentResult& result) {
  const MigExperiment& e = *result.experiment;
  std::string out = fmt::format("{}: {} {}\n{}\n", e.name, e.paper, e.figure, wrap(e.setup, kWrap));
  for (const auto& mix : result.mixes) out += format_mix(mix);
  if (!result.cases.empty()) out += "\n" + format_cases(result.cases);
  std::string source =
      "Source: tessera's simulated MIG GPU (sim::SimMig; not a real device); its assumptions "
      "(instance create and destroy times, job start time, sample noise) are in docs/mig.md.";
  if (!result.mixes.empty()) {
    source +=
        " Ratios are higher-is-better: a policy's throughput over the baseline's, the baseline's "
        "energy over the policy's.";
  }
  out += "\n" + wrap(source, kWrap) + "\n";
  return out;
}

json to_json(const MigExperimentResult& result) {
  const MigExperiment& e = *result.experiment;
  json mixes = json::array();
  for (const auto& mix : result.mixes) mixes.push_back(mix_json(mix));
  json cases = json::array();
  for (const auto& c : result.cases) cases.push_back(case_json(c));
  return {
      {"experiment", e.name},      {"paper", e.paper},
      {"figure", e.figure},        {"source", "tessera's simulated MIG GPU (not a real device)"},
      {"mixes", std::move(mixes)}, {"predictor_cases", std::move(cases)}};
}

}  // namespace tessera::experiment
