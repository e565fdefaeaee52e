// The MIG studies: the list is consistent with the scenario experiments, every built-in job file
// parses, a mix runs under every policy with nothing lost and its claims evaluated, the best
// static layout is the best of all fully configured ones, and the predictor study tells a
// foreseeable jump from one that is not.

#include "tessera/experiment/mig_studies.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/experiment/experiment.hpp"
#include "tessera/experiment/registry.hpp"
#include "tessera/experiment/run.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"

namespace tessera::experiment {
namespace {

// Three short custom jobs whose iterations barely scale with SMs (90% serial), so a slice runs
// them almost as fast as the whole GPU: two that fit a 1g.5gb slice and one that needs 3g.20gb.
constexpr std::string_view kSmallMix = R"(gpu: a100-40gb
seed: 3
jobs:
  - {name: a, kind: custom, iterations: 50, iteration_time: 100ms, serial_fraction: 0.9,
     estimate: 2GiB, memory: {base: 2GiB}}
  - {name: b, kind: custom, iterations: 80, iteration_time: 100ms, serial_fraction: 0.9,
     estimate: 3GiB, memory: {base: 3GiB}}
  - {name: c, kind: custom, iterations: 60, iteration_time: 100ms, serial_fraction: 0.9,
     estimate: 12GiB, memory: {base: 12GiB}}
)";
const PolicyRun& row(const MixResult& mix, std::string_view name) {
  for (const auto& r : mix.runs) {
    if (r.row == name) return r;
  }
  ADD_FAILURE() << "no row " << name;
  return mix.runs.front();
}

// The MIG studies' own list view: every one has a setup and files (names are checked across every
// kind in registry_test.cpp).
std::vector<const MigExperiment*> mig_studies() {
  std::vector<const MigExperiment*> out;
  for (const auto& e : experiments()) {
    if (const auto* m = e.as<MigExperiment>()) out.push_back(m);
  }
  return out;
}

TEST(MigStudies, TheFiveStudiesAreRegisteredWithASetup) {
  std::set<std::string> names;
  for (const MigExperiment* e : mig_studies()) {
    names.insert(e->name);
    EXPECT_FALSE(e->setup.empty()) << e->name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"mig-general", "mig-ml", "mig-llm", "mig-trace",
                                          "mig-predictor"}));
}

TEST(MigStudies, EveryFileIsBuiltInAndParses) {
  for (const MigExperiment* e : mig_studies()) {
    // A trace study draws its one mix from the data; every other one has files.
    ASSERT_NE(e->files.empty(), !e->trace) << e->name;
    for (const auto& file : e->files) {
      auto text = mig_file_text(file);
      ASSERT_TRUE(text.has_value()) << text.error().message();
      auto jobs = mig::parse_jobs(*text, file);
      ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
      EXPECT_FALSE(jobs->jobs.empty()) << file;
    }
  }
  auto missing = mig_file_text("nope.yaml");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("TESSERA_MIG_EXPERIMENT_FILES"), std::string::npos);
}

TEST(MigStudies, MixRunsUnderEveryPolicyAndLosesNoJob) {
  const std::vector<Claim> claims = {Claim{.statement = "throughput",
                                           .metric = mig_throughput(),
                                           .subject = std::string(kSchemeBRow),
                                           .baselines = {std::string(kSequentialRow)},
                                           .form = Form::kTimes,
                                           .paper = 6.2}};
  auto mix = run_mix(kSmallMix, "small.yaml", claims, {});
  ASSERT_TRUE(mix.has_value()) << mix.error().message();
  ASSERT_EQ(mix->runs.size(), 9u);
  EXPECT_EQ(mix->seed, 3u);
  EXPECT_EQ(mix->jobs, 3u);
  for (const auto& r : mix->runs) {
    EXPECT_EQ(r.result.completed(), 3) << r.row;
    EXPECT_GT(r.result.makespan, 0) << r.row;
    EXPECT_GT(r.result.energy_joules, 0) << r.row;
  }
  // Sequential runs one job at a time, so its makespan is the sum of the jobs' times; on slices
  // the jobs are barely slower and run side by side, so scheme B must finish sooner.
  EXPECT_LT(row(*mix, kSchemeBRow).result.makespan, row(*mix, kSequentialRow).result.makespan);
  EXPECT_FALSE(row(*mix, kBestStaticRow).detail.empty());
  // The bounds hold: no policy on MIG finishes before its bound (sequential runs with MIG off;
  // time-fit-share runs two jobs to an instance).
  EXPECT_GT(mix->bound.makespan, 0);
  EXPECT_FALSE(mix->bound.binding.empty());
  EXPECT_LE(mix->shared_bound.makespan, mix->bound.makespan);
  for (const auto& r : mix->runs) {
    if (r.row == kSequentialRow) continue;
    const bool shares = r.row == kTimeFitShareRow || r.row == kTimeFitShareErrorRow;
    const MigBound& bound = shares ? mix->shared_bound : mix->bound;
    EXPECT_GE(r.result.makespan, bound.makespan) << r.row;
  }
  ASSERT_EQ(mix->claims.size(), 1u);
  ASSERT_TRUE(mix->claims[0].tessera.has_value()) << mix->claims[0].why_not;
  EXPECT_GT(*mix->claims[0].tessera, 1.0);
  EXPECT_TRUE(mix->claims[0].same_direction);
  // Against itself a ratio is 1.
  auto self = improvement(mix->report, mig_throughput(), std::string(kSequentialRow),
                          std::string(kSequentialRow), Form::kTimes);
  ASSERT_TRUE(self.has_value());
  EXPECT_DOUBLE_EQ(*self, 1.0);
}

TEST(MigStudies, SeedOverrideReachesTheMix) {
  MigStudyOptions options;
  options.seed = 11;
  auto mix = run_mix(kSmallMix, "small.yaml", {}, options);
  ASSERT_TRUE(mix.has_value()) << mix.error().message();
  EXPECT_EQ(mix->seed, 11u);
}

TEST(MigStudies, BestStaticIsNoWorseThanAnyFullLayout) {
  auto jobs = mig::parse_jobs(kSmallMix, "small.yaml");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  auto best = find_best_static(*jobs);
  ASSERT_TRUE(best.has_value()) << best.error().message();
  EXPECT_EQ(best->run.completed(), 3);
  auto geometry = hw::find_mig_geometry("a100-40gb");
  ASSERT_TRUE(geometry.has_value());
  auto space = mig::LayoutSpace::build(*geometry);
  ASSERT_TRUE(space.has_value());
  auto id = space->find(best->layout);
  ASSERT_TRUE(id.has_value());
  EXPECT_TRUE(space->is_full(*id));
  auto spec = hw::find_gpu("a100-40gb");
  ASSERT_TRUE(spec.has_value());
  std::set<std::vector<int>> sets;
  for (const mig::StateId s : space->full_states()) {
    std::vector<int> profiles;
    for (const auto& p : space->layout(s).instances) profiles.push_back(p.profile_id);
    std::ranges::sort(profiles);
    sets.insert(profiles);
    sim::Engine engine;
    auto device = sim::SimMig::create(engine, *spec, study_device_options(jobs->seed));
    ASSERT_TRUE(device.has_value()) << device.error().message();
    mig::ManagerOptions options;
    options.scheme = mig::Scheme::kStatic;
    options.static_layout = space->layout(s);
    auto r = mig::run_jobs(**device, jobs->jobs, options);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_GE(best->run.completed(), r->completed()) << best->description;
    if (r->completed() == best->run.completed()) {
      EXPECT_LE(best->run.makespan, r->makespan)
          << best->description << " vs " << mig::describe(*geometry, space->layout(s));
    }
  }
  EXPECT_EQ(best->tried, sets.size());
}

// general-2's short Rodinia-like jobs join its long ones on one instance when the list
// alternates the longest job left and the shortest: 1.29x the best static layout (1.21x with the
// longest, shortest and least-area orders alone).
TEST(MigStudies, ShortJobsJoinLongOnesOnGeneral2) {
  auto text = mig_file_text("general-2.yaml");
  ASSERT_TRUE(text.has_value()) << text.error().message();
  auto mix = run_mix(*text, "general-2.yaml", {}, {});
  ASSERT_TRUE(mix.has_value()) << mix.error().message();
  const double over_static = core::to_seconds(row(*mix, kBestStaticRow).result.makespan) /
                             core::to_seconds(row(*mix, kTimeFitShareRow).result.makespan);
  EXPECT_GE(over_static, 1.25);
}

TEST(MigStudies, PredictorTellsAForeseeableJumpFromAnUnforeseeableOne) {
  auto text = mig_file_text("predictor.yaml");
  ASSERT_TRUE(text.has_value());
  auto cases = run_predictor_cases(*text, "predictor.yaml");
  ASSERT_TRUE(cases.has_value()) << cases.error().message();
  auto find = [&](std::string_view name) -> const PredictorCase& {
    for (const auto& c : *cases) {
      if (c.job == name) return c;
    }
    ADD_FAILURE() << "no case " << name;
    return cases->front();
  };
  for (const auto& name : {"linear", "staircase", "superlinear", "declared-jump"}) {
    const PredictorCase& c = find(name);
    ASSERT_TRUE(c.oom.has_value()) << name << " was meant to outgrow its slice";
    ASSERT_TRUE(c.alarm.has_value()) << name;
    EXPECT_LT(*c.alarm, *c.oom) << name;
  }
  const PredictorCase& jump = find("undeclared-jump");
  ASSERT_TRUE(jump.oom.has_value());
  EXPECT_EQ(*jump.oom, 50);
  // A flat history says nothing of a jump nobody declared.
  EXPECT_TRUE(!jump.alarm.has_value() || *jump.alarm >= *jump.oom);
  EXPECT_EQ(find("declared-jump").profile, "1g.5gb");
}

TEST(MigStudies, PredictorNeedsAnEstimate) {
  constexpr std::string_view kNoEstimate = R"(jobs:
  - {name: x, kind: custom, iterations: 10, iteration_time: 1ms, memory: {base: 1GiB}}
)";
  auto cases = run_predictor_cases(kNoEstimate, "x.yaml");
  ASSERT_FALSE(cases.has_value());
  EXPECT_NE(cases.error().message().find("job 'x' needs an `estimate`"), std::string::npos);
}

TEST(MigStudies, JsonCarriesPerJobTurnaround) {
  auto e = find_study<MigExperiment>("mig-predictor");
  ASSERT_TRUE(e.has_value()) << e.error().message();
  auto r = run_mig_experiment(**e, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto j = to_json(*r);
  EXPECT_EQ(j["experiment"], "mig-predictor");
  EXPECT_FALSE(j["predictor_cases"].empty());
  EXPECT_NE(format_result(*r).find("undeclared-jump"), std::string::npos);

  MigExperiment small{.name = "small",
                      .paper = "p",
                      .figure = "f",
                      .setup = "s",
                      .files = {},
                      .claims = {},
                      .predictor = false,
                      .trace = false};
  auto mix = run_mix(kSmallMix, "small.yaml", {}, {});
  ASSERT_TRUE(mix.has_value()) << mix.error().message();
  MigExperimentResult result{.experiment = &small, .mixes = {*mix}, .cases = {}};
  const auto json = to_json(result);
  EXPECT_GT(json["mixes"][0]["shared_bound"]["makespan_s"].get<double>(), 0.0);
  const auto policies = json["mixes"][0]["policies"];
  ASSERT_EQ(policies.size(), 9u);
  for (const auto& p : policies) {
    ASSERT_EQ(p["run"]["jobs"].size(), 3u) << p["policy"];
    EXPECT_GT(p["run"]["jobs"][0]["turnaround_s"].get<double>(), 0.0) << p["policy"];
  }
  EXPECT_NE(format_result(result).find("thr x seq"), std::string::npos);
}

}  // namespace
}  // namespace tessera::experiment
