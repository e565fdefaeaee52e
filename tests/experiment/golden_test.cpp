// Pins each experiment's JSON (results and claims) at its fixed seed and default duration, and
// the fast MIG studies' JSON at their files' seeds. The experiments whose defaults run a thousand
// requests (tens of seconds each) are pinned on their first seconds. When a model or policy change
// moves the numbers on purpose, regenerate with TESSERA_UPDATE_GOLDEN=1 and explain the change in
// the commit.

#include "support/golden/golden.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/experiment/registry.hpp"
#include "tessera/experiment/run.hpp"

namespace tessera::experiment {
namespace {

void expect_golden(const std::string& name, const std::string& actual) {
  test::expect_golden(test::golden_file("experiment", name + ".json"), actual);
}

class ExperimentGolden : public ::testing::TestWithParam<std::string> {};

// The duration each long experiment is pinned at; the others run their default.
Overrides pinned(const std::string& name) {
  for (const char* long_one : {"inference-stacking", "hybrid", "mixed", "frontier"}) {
    if (name == long_one) return Overrides{.duration = core::seconds(10), .seed = std::nullopt};
  }
  if (name == "trace-serving")
    return Overrides{.duration = core::seconds(20), .seed = std::nullopt};
  return {};
}

TEST_P(ExperimentGolden, JsonMatchesPinnedOutput) {
  auto e = find_study<Experiment>(GetParam());
  ASSERT_TRUE(e.has_value()) << e.error().message();
  auto r = run_experiment(**e, pinned(GetParam()), {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  expect_golden(GetParam(), to_json(*r).dump(2) + "\n");
}

// The MIG studies that take about a second; mig-general and mig-llm simulate every set of
// profiles per mix and take longer (their figures are in docs/mig.md).
class MigStudyGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MigStudyGolden, JsonMatchesPinnedOutput) {
  auto e = find_study<MigExperiment>(GetParam());
  ASSERT_TRUE(e.has_value()) << e.error().message();
  auto r = run_mig_experiment(**e, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  expect_golden(GetParam(), to_json(*r).dump(2) + "\n");
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (auto& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& e : experiments()) {
    if (e.as<Experiment>() != nullptr) out.push_back(e.name());
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllExperiments, ExperimentGolden, ::testing::ValuesIn(names()), test_name);
INSTANTIATE_TEST_SUITE_P(FastMigStudies, MigStudyGolden,
                         ::testing::Values(std::string("mig-ml"), std::string("mig-predictor")),
                         test_name);

}  // namespace
}  // namespace tessera::experiment
