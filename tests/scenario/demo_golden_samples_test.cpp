// The per-request samples a run keeps for plots (RunOptions::keep_samples) are not in its JSON:
// the demo's stays the pinned one.

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

TEST(DemoGolden, JsonIsUnchangedWhenSamplesAreKept) {
  auto s = parse_scenario(demo_scenario_yaml(), std::string(kDemoScenarioName), ".");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  // The demo's first minute: its full length (for a P99 over a thousand requests) is the CPU of
  // every other test here together.
  s->duration = core::seconds(60);
  auto options = test::sim_run_options();
  options.keep_samples = true;
  auto r = run_scenario(*s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  for (const metrics::ModeReport& m : r->modes) {
    for (const metrics::TenantReport& t : m.tenants) {
      EXPECT_EQ(t.samples.has_value(), t.inference.has_value()) << m.mode << " " << t.name;
      if (t.samples) {
        EXPECT_EQ(t.samples->ttft_ms.size(), t.inference->ttft_ms.count);
      }
    }
  }
  test::expect_golden(test::golden_file("scenario", "demo.json"),
                      metrics::to_json(*r).dump(2) + "\n");
}

}  // namespace
}  // namespace tessera::scenario
