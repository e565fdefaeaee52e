// Pins the demo's JSON for its fixed seed. When a model change moves the numbers on purpose,
// regenerate with TESSERA_UPDATE_GOLDEN=1 and explain the change in the commit.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/golden/golden.hpp"
#include "support/sim_run_options.hpp"
#include "tessera/core/time.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/scenario/demo_scenario.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::scenario {
namespace {

TEST(DemoGolden, JsonMatchesPinnedOutput) {
  auto s = parse_scenario(demo_scenario_yaml(), std::string(kDemoScenarioName), ".");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  // The demo's first minute: its full length (for a P99 over a thousand requests) is the CPU of
  // every other test here together.
  s->duration = core::seconds(60);
  auto options = test::sim_run_options();
  auto r = run_scenario(*s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  test::expect_golden(test::golden_file("scenario", "demo.json"),
                      metrics::to_json(*r).dump(2) + "\n");
}

}  // namespace
}  // namespace tessera::scenario
