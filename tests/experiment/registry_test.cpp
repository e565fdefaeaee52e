// The one experiment list is consistent: names are unique across every kind, every scenario
// study's configuration is built in and parses, every claim and column refers to modes and tenants
// its scenario has, and a mode that is not registered is an error rather than a row that silently
// goes missing.

#include "tessera/experiment/registry.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tessera/experiment/experiment.hpp"
#include "tessera/experiment/run.hpp"

namespace tessera::experiment {
namespace {

TEST(ExperimentRegistry, NamesAreUniqueAndFindable) {
  std::set<std::string> names;
  for (const auto& e : experiments()) {
    EXPECT_TRUE(names.insert(e.name()).second) << e.name() << " is listed twice";
    EXPECT_FALSE(e.paper().empty()) << e.name();
    EXPECT_FALSE(e.figure().empty()) << e.name();
    auto found = find_experiment(e.name());
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(*found, &e);
  }
  for (const char* name :
       {"inference-stacking", "hybrid", "training-colocation", "mixed", "trace-serving", "frontier",
        "right-sizing", "dvfs", "overheads", "mig-general", "mig-ml", "mig-llm", "mig-predictor",
        "flextopo-preemption", "flextopo-serving"}) {
    EXPECT_TRUE(names.count(name)) << name << " is missing";
  }
}

TEST(ExperimentRegistry, UnknownNameListsEveryKind) {
  auto r = find_experiment("stacking");
  ASSERT_FALSE(r.has_value());
  const std::string& message = r.error().message();
  EXPECT_NE(message.find("unknown experiment 'stacking'"), std::string::npos);
  for (const auto& e : experiments()) {
    EXPECT_NE(message.find(e.name()), std::string::npos) << e.name() << " is not listed";
  }
}

TEST(ExperimentRegistry, KindsAreTheirStudies) {
  ASSERT_TRUE(find_study<Experiment>("hybrid").has_value());
  ASSERT_TRUE(find_study<MigExperiment>("mig-ml").has_value());
  ASSERT_TRUE(find_study<FlextopoExperiment>("flextopo-preemption").has_value());
  auto wrong = find_study<Experiment>("mig-ml");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().message(), "experiment 'mig-ml' is a MIG study, not a scenario study");
}

TEST(ExperimentRegistry, EveryConfigurationLoadsAndValidates) {
  for (const auto& entry : experiments()) {
    const Experiment* study = entry.as<Experiment>();
    if (study == nullptr) continue;
    const Experiment& e = *study;
    EXPECT_FALSE(e.setup.empty()) << e.name;
    EXPECT_FALSE(e.assumptions.empty()) << e.name << " names no model assumption";
    ASSERT_FALSE(e.configs.empty()) << e.name;
    for (const auto& c : e.configs) {
      EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(TESSERA_SOURCE_DIR) /
                                          "examples/experiments" / c.scenario_file))
          << c.scenario_file;
      auto s = load_config(c);
      ASSERT_TRUE(s.has_value()) << e.name << ": " << s.error().message();
      auto valid = validate(e, *s);
      EXPECT_TRUE(valid.has_value()) << valid.error().message();
    }
  }
}

TEST(ExperimentRegistry, TracePathsResolveAgainstTheCheckout) {
  auto s = load_config(Config{.label = "", .scenario_file = "trace-serving.yaml"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  const auto& path = s->tenants.front().arrivals.trace_path;
  EXPECT_TRUE(std::filesystem::path(path).is_absolute()) << path;
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
}

TEST(ExperimentRegistry, TheFrontierOnAFileProtectsTheMostImportantServiceAgainstATrainer) {
  const std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/examples/three-services-two-trainers.yaml";
  auto e = frontier_on_file(path);
  ASSERT_TRUE(e.has_value()) << e.error().message();
  ASSERT_EQ(e->configs.size(), 1u);
  EXPECT_EQ(e->configs.front().shown(), path);
  ASSERT_TRUE(e->frontier.has_value());
  // chat-14b has the highest priority of the three services; resnet is the first trainer.
  EXPECT_EQ(e->frontier->y.tenant, "chat-14b");
  EXPECT_EQ(e->frontier->x.tenant, "resnet");
  for (const auto& m : e->columns) {
    if (!m.tenant.empty()) {
      EXPECT_TRUE(m.tenant == "chat-14b" || m.tenant == "resnet") << m.tenant;
    }
  }
  auto s = load_config(e->configs.front());
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_TRUE(validate(*e, *s).has_value());
}

TEST(ExperimentRegistry, TheFrontierOnAFileWithoutAServiceSaysWhatIsMissing) {
  auto e = frontier_on_file(std::string(TESSERA_SOURCE_DIR) +
                            "/examples/experiments/training-colocation-low.yaml");
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("needs a latency-critical tenant with a latency target"),
            std::string::npos)
      << e.error().message();
}

TEST(ExperimentRegistry, AnUnregisteredModeIsAnError) {
  // The same text as a built-in scenario, with a mode nobody registered.
  auto text = scenario_text("hybrid.yaml");
  ASSERT_TRUE(text.has_value());
  std::string yaml(*text);
  const std::string from = "modes: [";
  yaml.replace(yaml.find(from), from.size(), "modes: [no-such-policy, ");
  auto s = scenario::parse_scenario(yaml, "hybrid.yaml", ".");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("unknown sharing mode 'no-such-policy'"), std::string::npos)
      << s.error().message();
}

TEST(ExperimentRegistry, AClaimOnAModeNotRunIsAnError) {
  auto s = load_config(Config{.label = "", .scenario_file = "hybrid.yaml"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  Experiment e{.name = "broken",
               .paper = "p",
               .figure = "f",
               .setup = "s",
               .configs = {},
               .columns = {},
               .claims = {Claim{
                   .statement = "hp p99 vs mps",
                   .metric = Metric{.quantity = Quantity::kE2eP99Ms, .tenant = "hp", .counter = ""},
                   .subject = "no-such-policy",
                   .baselines = {"mps"},
                   .form = Form::kTimes,
                   .paper = 13}},
               .assumptions = {},
               .run = {}};
  auto valid = validate(e, *s);
  ASSERT_FALSE(valid.has_value());
  EXPECT_NE(valid.error().message().find("mode 'no-such-policy'"), std::string::npos)
      << valid.error().message();

  e.claims.front().subject = "mps";
  e.claims.front().metric.tenant = "nobody";
  valid = validate(e, *s);
  ASSERT_FALSE(valid.has_value());
  EXPECT_NE(valid.error().message().find("tenant 'nobody'"), std::string::npos);

  e.claims.clear();
  e.assumptions = {"sim.warp_size"};
  valid = validate(e, *s);
  ASSERT_FALSE(valid.has_value());
  EXPECT_NE(valid.error().message().find("unknown model assumption 'sim.warp_size'"),
            std::string::npos);
}

TEST(ExperimentRegistry, OutputNamesTheSimulatorAndItsAssumptions) {
  auto e = find_study<Experiment>("hybrid");
  ASSERT_TRUE(e.has_value());
  auto r = run_experiment(**e, Overrides{.duration = core::seconds(1), .seed = std::nullopt}, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const std::string text = format_result(*r);
  EXPECT_NE(text.find("Source: tessera's simulated GPU (not a real device)"), std::string::npos);
  EXPECT_NE(text.find("sim.achievable_compute_fraction = 0.7"), std::string::npos) << text;
  for (const auto& mode : r->configs.front().scenario.modes) {
    EXPECT_NE(text.find("\n" + mode + " "), std::string::npos) << mode << " has no row:\n" << text;
  }
  EXPECT_EQ(r->configs.front().scenario.duration, core::seconds(1));
}

}  // namespace
}  // namespace tessera::experiment
