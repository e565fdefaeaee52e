// A scenario's `mode_options:` reach the mode made from it, through each mode's registry entry.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/gpu/registry.hpp"
#include "tessera/scenario/scenario.hpp"

namespace tessera::scenario {
namespace {

using ::testing::HasSubstr;

// `mode_options:` is on line 6.
std::string scenario_text(std::string_view mode, std::string_view options) {
  return fmt::format(R"(name: options
gpu: H100-SXM5-80GB
duration: 1s
mode: {}
mode_options:
  {}
tenants:
  - name: chat
    kind: inference
    model: llama-3-8b
    arrivals: {{process: poisson, rate: 1, input_tokens: {{min: 10, max: 20}},
               output_tokens: {{min: 2, max: 5}}}}
)",
                     mode, options);
}

// Written to a file and loaded, as `tessera simulate` does.
core::Result<Scenario> load(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("tessera-mode-options-{}-{}.yaml", ::getpid(), name);
  std::ofstream(path) << text;
  auto s = load_scenario(path.string());
  std::filesystem::remove(path);
  return s;
}

struct Candidate {
  std::string yaml;
  gpu::OptionValue value;
};

// Valid-looking values of each kind; a test takes the first that differs from the default and
// the mode accepts.
std::vector<Candidate> candidates(gpu::OptionKind kind) {
  switch (kind) {
    case gpu::OptionKind::kDuration: return {{"3us", core::micros(3)}, {"7ms", core::millis(7)}};
    case gpu::OptionKind::kSwitch: return {{"true", true}, {"false", false}};
    case gpu::OptionKind::kNumber:
    case gpu::OptionKind::kPercent: return {{"0.5", 0.5}, {"0.25", 0.25}, {"50", 50.0}};
  }
  return {};
}

TEST(ModeOptions, EveryDeclaredOptionReachesTheModeMadeFromTheScenario) {
  for (const auto& entry : gpu::sharing_modes()) {
    for (const auto& option : entry.options) {
      bool checked = false;
      std::string last_error;
      for (const auto& c : candidates(option.kind)) {
        const std::string expected = gpu::format_option(option.kind, c.value);
        if (expected == option.default_value) continue;
        const auto s = load(fmt::format("{}-{}", entry.name, option.key),
                            scenario_text(entry.name, fmt::format("{}: {}", option.key, c.yaml)));
        if (!s) {
          last_error = s.error().message();
          continue;
        }
        EXPECT_EQ(s->mode_options.value(option.key), expected) << option.key;
        auto mode = gpu::make_sharing_mode(entry.name, s->mode_options);
        ASSERT_TRUE(mode) << mode.error().message();
        bool found = false;
        for (const auto& setting : entry.settings_of(**mode)) {
          if (setting.key != option.key) continue;
          found = true;
          EXPECT_EQ(setting.value, expected) << entry.name << " " << option.key;
        }
        EXPECT_TRUE(found) << entry.name << " " << option.key;
        checked = true;
        break;
      }
      EXPECT_TRUE(checked) << entry.name << " " << option.key
                           << ": no candidate value was accepted; last error: " << last_error;
    }
  }
}

TEST(ModeOptions, OutOfRangeValueFailsAtParseTimeAtItsKey) {
  // lithos is not run: every mode's keys are still checked when the scenario is read.
  const auto s = load("slip", scenario_text("mps", "latency_slip: 1.5"));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr(".yaml:6:17: mode_options.latency_slip:"));
  EXPECT_THAT(s.error().message(), HasSubstr("[0, 1]"));
  EXPECT_THAT(s.error().message(), HasSubstr("1.5"));
}

TEST(ModeOptions, UnknownKeyIsNamedWithEveryKnownOne) {
  const auto s = load("unknown", scenario_text("lithos", "atom_size: 10"));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr(".yaml:6:3: mode_options.atom_size:"));
  EXPECT_THAT(s.error().message(), HasSubstr("unknown field 'atom_size'"));
  for (const auto key : gpu::mode_option_keys()) {
    EXPECT_THAT(s.error().message(), HasSubstr(std::string(key)));
  }
}

}  // namespace
}  // namespace tessera::scenario
