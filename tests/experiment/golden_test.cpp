// Pins each experiment's JSON (results and claims) at its fixed seed and default duration. When a
// model or policy change moves the numbers on purpose, regenerate with TESSERA_UPDATE_GOLDEN=1
// and explain the change in the commit.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tessera/experiment/run.hpp"

namespace tessera::experiment {
namespace {

std::string golden_path(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/experiment/golden/" + name + ".json";
}

class ExperimentGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ExperimentGolden, JsonMatchesPinnedOutput) {
  auto e = find_experiment(GetParam());
  ASSERT_TRUE(e.has_value()) << e.error().message();
  auto r = run_experiment(**e, {}, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const std::string actual = to_json(*r).dump(2) + "\n";
  const std::string path = golden_path(GetParam());
  if (std::getenv("TESSERA_UPDATE_GOLDEN")) {
    std::ofstream out(path);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    GTEST_SKIP() << "golden file rewritten: " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path << "; create it with TESSERA_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << GetParam()
                                    << "'s output changed; if on purpose, regenerate with "
                                       "TESSERA_UPDATE_GOLDEN=1";
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& e : experiments()) out.push_back(e.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllExperiments, ExperimentGolden, ::testing::ValuesIn(names()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tessera::experiment
