#include "tessera/cli/validate_command.hpp"

#include <fmt/format.h>

#include <map>

#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/data_dir.hpp"
#include "tessera/validation/fit.hpp"
#include "tessera/validation/html_report.hpp"
#include "tessera/validation/measurement_csv.hpp"
#include "tessera/validation/predict.hpp"
#include "tessera/validation/profile_readers.hpp"
#include "tessera/validation/report.hpp"

namespace tessera::cli {

namespace {

void append(validation::MeasurementSet& to, validation::MeasurementSet from) {
  for (auto& row : from.rows) to.rows.push_back(std::move(row));
  for (auto& s : from.skipped) to.skipped.push_back(std::move(s));
}

core::Result<validation::MeasurementSet> read_inputs(const ValidateFlags& f) {
  validation::MeasurementSet set;
  for (const std::string& file : f.files) {
    TESSERA_ASSIGN_OR_RETURN(auto rows, validation::read_measurement_csv(file));
    append(set, std::move(rows));
  }
  if (!f.files.empty() && f.profiles.empty()) return set;
  TESSERA_ASSIGN_OR_RETURN(const std::string root, experiment::data_subdir("perf_profiles"));
  if (f.profiles.empty()) return validation::read_shared_profiles(root);
  for (const std::string& relative : f.profiles) {
    TESSERA_ASSIGN_OR_RETURN(auto rows, validation::read_profile(root, relative));
    append(set, std::move(rows));
  }
  return set;
}

// What the page compares, for under its title.
std::string describe_inputs(const ValidateFlags& f) {
  std::vector<std::string> inputs = f.files;
  for (const std::string& p : f.profiles) inputs.push_back("perf_profiles/" + p);
  if (inputs.empty()) inputs.push_back("every public profile under perf_profiles/");
  const std::string_view model = f.fit       ? "the options fitted by --fit"
                                 : f.generic ? "the generic assumptions (--generic)"
                                             : "each GPU's calibration";
  return fmt::format("Measurements: {}. Simulated GPU: {}.", fmt::join(inputs, ", "), model);
}

}  // namespace

void add_validate_options(CLI::App& command, ValidateFlags& f) {
  command.add_option("files", f.files,
                     "Measurement files (CSV: gpu, kind, the configuration, value, unit; see "
                     "docs/validate.md); without any, the public profiles under the data "
                     "directory's perf_profiles/");
  command.add_option("--profile", f.profiles,
                     "Only this profile file, relative to perf_profiles/ (repeatable), e.g. "
                     "inference_sim_kernels_h100/gemm/h100/data.csv");
  command.add_option("--csv", f.csv_path,
                     "Write every compared row (configuration, measured, "
                     "simulated, error) to this CSV file");
  command.add_option("--report", f.report_path,
                     "Write the report as one HTML page (tables, and plots of simulated against "
                     "measured and of |error| per category) that opens offline");
  command.add_option("--worst", f.worst, "Worst rows to list per category")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_flag("--fit", f.fit,
                   "First fit the simulator's options per GPU on the rows the split assigns to "
                   "fitting (docs/validate.md), print them, then compare with the fitted values");
  command.add_flag("--generic", f.generic,
                   "Compare with the simulator's generic assumptions (sim_gpu_options.hpp) "
                   "instead of each GPU's calibration: the model before it was fitted");
  command.add_flag("-q,--quiet", f.quiet, "No progress line");
}

Outcome run_validate_command(const ValidateFlags& f) {
  if (f.fit && f.generic) {
    return core::fail(core::Domain::kConfig, core::Code::kInvalidArgument,
                      "--fit and --generic exclude each other: a fit replaces the options "
                      "--generic would compare with");
  }
  TESSERA_ASSIGN_OR_RETURN(validation::MeasurementSet set, read_inputs(f));
  if (set.rows.empty()) {
    return core::fail(core::Domain::kConfig, core::Code::kInvalidArgument,
                      "no measurement rows to compare (every row was skipped or the files are "
                      "empty)");
  }
  ProgressLine progress(!f.quiet);
  std::map<std::string, sim::SimGpuOverrides> fitted;
  std::map<std::string, workload::EngineCosts> engine;
  std::map<std::string, validation::HarnessCosts> harness;
  if (f.fit) {
    TESSERA_ASSIGN_OR_RETURN(
        const std::vector<validation::GpuFit> fits,
        validation::fit(set, [&](const std::string& gpu, const std::string& group, int n) {
          progress.update(fmt::format("evaluations fitting {} on {}", group, gpu), n,
                          validation::kMaxFitEvaluations);
        }));
    progress.finish();
    fmt::print("{}\n", validation::format_fit(fits));
    for (const auto& g : fits) {
      fitted.emplace(g.gpu, g.overrides);
      if (g.engine) engine.emplace(g.gpu, *g.engine);
      if (g.harness) harness.emplace(g.gpu, *g.harness);
    }
  }
  validation::Predictor predictor({}, std::move(fitted), !f.generic, std::move(engine),
                                  std::move(harness));
  TESSERA_ASSIGN_OR_RETURN(
      const validation::ValidationReport report,
      validation::validate(std::move(set), predictor, static_cast<std::size_t>(f.worst),
                           [&](std::size_t done, std::size_t total) {
                             progress.update("rows", static_cast<std::int64_t>(done),
                                             static_cast<std::int64_t>(total));
                           }));
  progress.finish();
  fmt::print("{}", validation::format_report(report));
  if (!f.csv_path.empty()) TESSERA_TRY(write_text(f.csv_path, validation::to_csv(report)));
  if (!f.report_path.empty()) {
    TESSERA_TRY(
        write_text(f.report_path, validation::format_html_report(report, describe_inputs(f))));
  }
  return core::Status{};
}

}  // namespace tessera::cli
