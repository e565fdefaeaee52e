// Pins the demo's JSON for its fixed seed. When a model change moves the numbers on purpose,
// regenerate with TESSERA_UPDATE_GOLDEN=1 and explain the change in the commit.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tessera/backends/sim/gpu/sim_run_backend.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/scenario/demo_scenario.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::scenario {
namespace {

const std::string kGolden = std::string(TESSERA_SOURCE_DIR) + "/tests/scenario/golden/demo.json";

std::string run_demo_json() {
  auto s = parse_scenario(demo_scenario_yaml(), std::string(kDemoScenarioName), ".");
  EXPECT_TRUE(s.has_value());
  RunOptions options;
  options.backend = [](const Scenario& run) {
    return core::Result<std::unique_ptr<device::RunBackend>>(
        sim::make_sim_run_backend(run.sim_options));
  };
  auto r = run_scenario(*s, options);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r ? metrics::to_json(*r).dump(2) + "\n" : "";
}

TEST(DemoGolden, JsonMatchesPinnedOutput) {
  const std::string actual = run_demo_json();
  if (std::getenv("TESSERA_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(std::filesystem::path(kGolden).parent_path());
    std::ofstream out(kGolden);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << kGolden;
    GTEST_SKIP() << "golden file rewritten: " << kGolden;
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in) << "missing " << kGolden << "; create it with TESSERA_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "the demo's output changed; if on purpose, regenerate "
                                       "with TESSERA_UPDATE_GOLDEN=1";
}

}  // namespace
}  // namespace tessera::scenario
