#pragma once
// The MIG level's experiments (MIGM, arXiv 2508.18556): job mixes (examples/mig/experiments/,
// JOBS.yaml format, built into the binary) run on a simulated MIG GPU under the paper's baseline
// (one job at a time on the whole GPU), the reviewers' baseline (the best static MIG layout for
// the mix) and MIGM's schemes; and the predictor study (the iteration at which early restart
// fires against the one at which the job runs out of memory).
//
// The scenario experiments (experiment.hpp) run sharing modes on a scenario; these run batch
// jobs on sim::SimMig, so they have their own runner. The paper's claims are the same Claim data
// (claim.hpp), evaluated on a metrics::RunReport that holds one row per policy and the policy's
// figures as counters.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/mig/sim_mig.hpp"
#include "tessera/core/error.hpp"
#include "tessera/experiment/claim.hpp"
#include "tessera/experiment/mig_bound.hpp"
#include "tessera/experiment/mig_optimum.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"
#include "tessera/mig/runtime/manager.hpp"

namespace tessera::experiment {

// The policies every mix runs under, as rows of its table.
inline constexpr std::string_view kSequentialRow = "sequential";   // whole GPU, one job at a time
inline constexpr std::string_view kBestStaticRow = "best-static";  // best fully configured layout
inline constexpr std::string_view kSchemeARow = "scheme-A";
inline constexpr std::string_view kSchemeBRow = "scheme-B";
inline constexpr std::string_view kSchemeBNoEarlyRow = "scheme-B-no-early";  // early restart off
inline constexpr std::string_view kTimeFitRow = "time-fit";  // tessera's own (mig/policy/time_fit)
// time-fit with every predicted time off by a seeded lognormal factor, sigma 0.2 (within about
// +-30% for nine in ten): what its gain owes to a kernel model as exact as the simulator's.
inline constexpr std::string_view kTimeFitErrorRow = "time-fit-err20";
// time-fit where an instance may run two jobs under MPS (sim::SimMigOptions::jobs_per_instance):
// MIG and SM sharing on one GPU.
inline constexpr std::string_view kTimeFitShareRow = "time-fit-share";
// time-fit-share with every predicted time and pair slowdown off by a seeded lognormal factor,
// sigma 0.2: what its gain owes to a co-run model no measurement has checked.
inline constexpr std::string_view kTimeFitShareErrorRow = "time-fit-share-err20";

// The figures of each row (counter names of the RunReport rows, unit included).
inline constexpr std::string_view kJobsPerHour = "jobs/h";
inline constexpr std::string_view kEnergyKj = "energy kJ";
inline constexpr std::string_view kMeanTurnaround = "mean turnaround s";
inline constexpr std::string_view kMaxTurnaround = "max turnaround s";
inline constexpr std::string_view kRestarts = "restarts";
inline constexpr std::string_view kCompleted = "completed";
inline constexpr std::string_view kMaxWait = "max wait s";  // submission to first start

// Metrics over those counters, for claims and ratios.
Metric mig_throughput();
Metric mig_energy();

// Called after each simulated run of a study: runs done so far, runs in all, what ran.
using StudyProgress =
    std::function<void(std::int64_t done, std::int64_t total, std::string_view what)>;

struct MigStudyOptions {
  std::optional<std::uint64_t> seed;  // overrides each mix's seed
  StudyProgress progress;
};

// The simulated device's options the studies and `tessera mig plan|run` run with: SimMigOptions'
// defaults (ASSUMPTION values, docs/mig.md) with `seed`.
sim::SimMigOptions study_device_options(std::uint64_t seed);
// Its instance create, destroy and job start times, as mig_bound and mig_optimum weigh them.
MigBoundCosts study_bound_costs();

// Time-fit's manager options: each job's time on each profile predicted by `model`, the
// simulated GPU's kernel model (shared, so that its timings serve mig_bound too), and the
// simulated device's reconfiguration
// and start times (study_device_options) as the costs it weighs. `prediction_error` > 0 multiplies
// each prediction by exp(N(0, prediction_error)), drawn per job and profile from `seed`.
// `share`: pairs' slowdowns side by side on one instance too (ManagerOptions::co_run), for a
// device whose instances run two jobs; `prediction_error` multiplies each slowdown by its own
// draw as well.
mig::ManagerOptions time_fit_options(std::shared_ptr<sim::SliceCostModel> model,
                                     double prediction_error = 0, std::uint64_t seed = 1,
                                     bool share = false);

// The fully configured layout of the jobs' GPU (its LayoutSpace's full states, scheme static)
// under which a simulated run completes the most jobs, then has the shortest makespan, then the
// lowest state id; with that run. Layouts that differ only in placement run the same on the
// simulator, so one per set of profiles is simulated. The reviewers' baseline, and `tessera mig
// run --scheme static`.
struct BestStatic {
  mig::Layout layout;
  std::string description;  // mig::describe
  std::size_t tried = 0;    // layouts simulated (distinct sets of profiles)
  mig::MigRunResult run;
};
core::Result<BestStatic> find_best_static(const mig::JobsFile& jobs);

struct PolicyRun {
  std::string row;
  std::string detail;  // best-static: the layout it chose
  mig::MigRunResult result;
  hw::MigGeometry geometry;  // the device's it ran on (sequential: the whole GPU, one profile)
};

struct MixResult {
  std::string file;  // under examples/mig/experiments/
  std::string gpu;
  std::uint64_t seed = 0;
  std::size_t jobs = 0;
  std::size_t static_layouts_tried = 0;  // BestStatic::tried
  MigBound bound;                        // one job to an instance (mig_bound)
  MigBound shared_bound;                 // two jobs to an instance
  // The best schedules a policy deciding at job ends can make (mig_optimum), one and two jobs to
  // an instance.
  MigOptimum optimum;
  MigOptimum shared_optimum;
  std::vector<PolicyRun> runs;  // in row order
  metrics::RunReport report;    // one ModeReport per row, its figures as counters
  std::vector<ClaimResult> claims;
};

// Runs one mix (JOBS.yaml text) under every policy (the best static layout: find_best_static) and
// evaluates `claims` on it.
core::Result<MixResult> run_mix(std::string_view text, const std::string& file,
                                const std::vector<Claim>& claims, const MigStudyOptions& options);

// One job of the predictor study on the slice it starts on: the smallest profile holding its
// static estimate. Its memory is replayed into the predictor one sample per iteration, with the
// simulated device's sample noise and the file's seed (mig::first_alarm_iteration).
struct PredictorCase {
  std::string job;
  std::string description;
  std::string profile;  // "2g.10gb"
  std::int64_t slice_bytes = 0;
  std::int64_t iterations = 0;
  std::int64_t peak_bytes = 0;        // the trajectory's true peak of reserved memory
  std::optional<std::int64_t> alarm;  // the iteration early restart fires at (none: never)
  // The same with the paper's predictor alone (PredictorOptions::linear_only).
  std::optional<std::int64_t> alarm_linear_only;
  // How the job's first attempt ended when it ran alone under scheme B on the simulated GPU, whose
  // samples carry noise of their own: "early restart at 35", "out of memory at 50", "completed
  // at 400".
  std::string in_run;
  std::optional<std::int64_t> oom;  // the iteration it runs out of memory (none: it fits)
  bool declared = false;            // its growth was declared in advance
};

core::Result<std::vector<PredictorCase>> run_predictor_cases(std::string_view text,
                                                             const std::string& file);

struct MigExperiment {
  std::string name;                // `tessera experiment NAME`
  std::string paper;               // "MIGM (Saraha et al., arXiv 2508.18556)"
  std::string figure;              // "§5.2, Fig. 4"
  std::string setup;               // the paper's setup, tessera's, and how they differ
  std::vector<std::string> files;  // mixes (or predictor cases) under examples/mig/experiments/
  std::vector<Claim> claims;       // evaluated on every mix
  bool predictor = false;          // the files hold predictor cases, not mixes
  bool trace = false;              // one mix drawn from the cluster traces (mig_trace_mix.hpp)
};

// The text of examples/mig/experiments/FILE as built into the binary.
core::Result<std::string_view> mig_file_text(std::string_view file);

struct MigExperimentResult {
  const MigExperiment* experiment = nullptr;
  std::vector<MixResult> mixes;
  std::vector<PredictorCase> cases;
};

core::Result<MigExperimentResult> run_mig_experiment(const MigExperiment& e,
                                                     const MigStudyOptions& options);
// Per mix: the policies' table with ratios against sequential and against the best static layout,
// the claims (paper | tessera | same direction?) and the source line; for the predictor study, its
// table.
std::string format_result(const MigExperimentResult& result);
// The same with every policy's per-job outcomes (turnaround, attempts, peak memory).
nlohmann::json to_json(const MigExperimentResult& result);
// A best schedule as the experiments and `tessera mig plan` write it: makespan, jobs/h, whether
// every schedule was searched, the steps and the decisions; or why nothing was searched.
nlohmann::json optimum_json(const MigOptimum& o);

}  // namespace tessera::experiment
