// The runner's progress reports: once per simulated second and at each mode's end, in order,
// for every mode.

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/sim_run_options.hpp"
#include "tessera/core/time.hpp"
#include "tessera/scenario/demo_scenario.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::scenario {
namespace {

TEST(RunnerProgress, ReportsEachSimulatedSecondAndEachModesEnd) {
  auto s = parse_scenario(demo_scenario_yaml(), std::string(kDemoScenarioName), ".");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  s->duration = core::millis(3500);
  s->modes = {"exclusive", "mps"};
  auto options = test::sim_run_options();
  std::vector<std::pair<std::size_t, core::Nanos>> seen;
  options.progress = [&](const Progress& p) {
    EXPECT_EQ(p.mode_count, 2U);
    EXPECT_EQ(p.duration, core::millis(3500));
    EXPECT_EQ(p.mode, s->modes[p.mode_index]);
    seen.emplace_back(p.mode_index, p.simulated);
  };
  auto r = run_scenario(*s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const std::vector<std::pair<std::size_t, core::Nanos>> want = {
      {0, core::seconds(1)}, {0, core::seconds(2)}, {0, core::seconds(3)}, {0, core::millis(3500)},
      {1, core::seconds(1)}, {1, core::seconds(2)}, {1, core::seconds(3)}, {1, core::millis(3500)}};
  EXPECT_EQ(seen, want);
}

}  // namespace
}  // namespace tessera::scenario
