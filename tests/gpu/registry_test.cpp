#include "tessera/gpu/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <any>
#include <set>
#include <string>

#include "gpu/option_test_util.hpp"
#include "tessera/gpu/modes/cogpu/cogpu_options.hpp"
#include "tessera/gpu/modes/lithos/lithos_options.hpp"
#include "tessera/gpu/modes/mps/mps_options.hpp"
#include "tessera/gpu/modes/priority_fill/priority_fill_options.hpp"

namespace tessera::gpu {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Registry, ListsTheBaselinesFirstThenThePapersSchedulersWithSummaries) {
  std::vector<std::string> names;
  for (const auto& entry : sharing_modes()) {
    names.emplace_back(entry.name);
    EXPECT_FALSE(entry.summary.empty()) << entry.name;
  }
  ASSERT_GE(names.size(), 4u);
  EXPECT_THAT(std::vector<std::string>(names.begin(), names.begin() + 4),
              ElementsAre("exclusive", "time-slicing", "mps", "static-partitions"));
  EXPECT_THAT(names, Contains("lithos"));
}

TEST(Registry, MakesEachModeByNameWithItsDefaults) {
  for (const auto& entry : sharing_modes()) {
    auto mode = make_sharing_mode(entry.name);
    ASSERT_TRUE(mode) << entry.name;
    EXPECT_EQ((*mode)->name(), entry.name);
    EXPECT_TRUE((*mode)->partitions().empty());  // nothing before attach
    const auto made = entry.settings_of(**mode);
    ASSERT_EQ(made.size(), entry.options.size()) << entry.name;
    for (std::size_t i = 0; i < made.size(); ++i) {
      EXPECT_EQ(made[i].key, entry.options[i].key);
      EXPECT_EQ(made[i].value, entry.options[i].default_value) << entry.name << " " << made[i].key;
    }
  }
}

TEST(Registry, UnknownNameListsTheKnownOnes) {
  const auto mode = make_sharing_mode("vgpu");
  ASSERT_FALSE(mode);
  EXPECT_EQ(mode.error().code(), core::Code::kNotFound);
  EXPECT_THAT(mode.error().message(), HasSubstr("unknown sharing mode 'vgpu'"));
  EXPECT_THAT(mode.error().message(), HasSubstr("exclusive, time-slicing, mps, static-partitions"));
}

TEST(Registry, EveryOptionSaysWhatItMeansAndWhatItsDefaultRestsOn) {
  for (const auto& entry : sharing_modes()) {
    const auto defaults = entry.settings(entry.defaults());
    ASSERT_EQ(defaults.size(), entry.options.size()) << entry.name;
    for (std::size_t i = 0; i < defaults.size(); ++i) {
      const auto& option = entry.options[i];
      EXPECT_FALSE(option.key.empty()) << entry.name;
      EXPECT_FALSE(option.doc.meaning.empty()) << option.key;
      EXPECT_FALSE(option.doc.basis.empty()) << option.key;
      EXPECT_EQ(defaults[i].value, option.default_value) << option.key;
    }
  }
}

TEST(Registry, OptionKeysAreListedOnceEachWithTheirDefaults) {
  const auto keys = mode_option_keys();
  EXPECT_EQ(std::set<std::string_view>(keys.begin(), keys.end()).size(), keys.size());
  EXPECT_THAT(keys, Contains("remap_min_residency"));
  const ModeSettings defaults;
  EXPECT_EQ(defaults.value("time_slice"), "2000 us");
  EXPECT_EQ(defaults.value("mps_active_thread_percentage"), "100%");
  EXPECT_EQ(defaults.value("right_sizing"), "off");
  EXPECT_EQ(defaults.value("latency_slip"), "0.1");
  EXPECT_EQ(defaults.value("remap_min_residency"), "2000 us");
  EXPECT_FALSE(defaults.value("atom_size").has_value());
}

TEST(Registry, CogpuAndTpotFirstDeclareTheSameRemapOptions) {
  std::vector<std::string_view> cogpu, tpot_first;
  for (const auto& entry : sharing_modes()) {
    for (const auto& option : entry.options) {
      if (entry.name == "cogpu") cogpu.push_back(option.key);
      if (entry.name == "tpot-first") tpot_first.push_back(option.key);
    }
  }
  EXPECT_THAT(cogpu, ElementsAre("remap_cost", "remap_min_residency"));
  EXPECT_EQ(tpot_first, cogpu);
}

// Every mode, every option it declares, its default and meaning: what `tessera list` prints.
TEST(Registry, ListingShowsEveryModeWithItsOptions) {
  const std::string listing = sharing_modes_listing();
  for (const auto& entry : sharing_modes()) {
    EXPECT_THAT(listing, HasSubstr(std::string(entry.name))) << entry.name;
    EXPECT_THAT(listing, HasSubstr(std::string(entry.summary))) << entry.name;
    for (const auto& option : entry.options) {
      const auto line = listing.find("      " + std::string(option.key) + " ");
      ASSERT_NE(line, std::string::npos) << option.key;
      const std::string rest = listing.substr(line, listing.find('\n', line) - line);
      EXPECT_THAT(rest, HasSubstr(option.default_value)) << option.key;
      EXPECT_THAT(rest, HasSubstr(std::string(option.doc.meaning))) << option.key;
      EXPECT_THAT(listing, HasSubstr(std::string(option.doc.basis))) << option.key;
    }
  }
}

TEST(ModeSettings, MakesEachModeWithItsChangedOptions) {
  ModeSettings settings;
  settings.of<LithosOptions>("lithos").latency_slip = 0.25;
  settings.of<CoGpuOptions>("tpot-first").remap_cost = core::micros(40);
  auto lithos = make_sharing_mode("lithos", settings);
  ASSERT_TRUE(lithos);
  EXPECT_THAT(test::entry_of("lithos").settings_of(**lithos),
              Contains(::testing::Field(&OptionSetting::value, "0.25")));
  EXPECT_EQ(settings.value("latency_slip"), "0.25");
  // Shared keys are set per mode when changed in code; cogpu kept its default.
  EXPECT_EQ(settings.of<CoGpuOptions>("cogpu").remap_cost, CoGpuOptions{}.remap_cost);
}

TEST(ModeSettings, TypedAccessToAnotherModesOptionsIsAProgrammingError) {
  ModeSettings settings;
  EXPECT_THROW(settings.of<MpsOptions>("lithos"), std::bad_any_cast);
  EXPECT_THROW(settings.of<MpsOptions>("vgpu"), std::out_of_range);
  EXPECT_FALSE(settings.stored("vgpu").has_value());
}

// Overrides apply over what is there: keys given change, the rest keep their values; a bad one
// changes nothing.
TEST(ModeSettings, ApplyChangesOnlyTheKeysGiven) {
  auto base = core::ConfigNode::parse("{best_effort_share: 0.2, atom_duration: 100us}", "a.yaml");
  ASSERT_TRUE(base);
  auto settings = ModeSettings::decode(*base);
  ASSERT_TRUE(settings);
  auto over = core::ConfigNode::parse("{slo_guided: true}", "b.yaml");
  ASSERT_TRUE(over);
  ASSERT_TRUE(settings->apply(*over));
  EXPECT_TRUE(settings->of<PriorityFillOptions>("priority-fill").slo_guided);
  EXPECT_EQ(settings->of<PriorityFillOptions>("priority-fill").best_effort_share, 0.2);
  EXPECT_EQ(settings->of<LithosOptions>("lithos").atom_duration, core::micros(100));
  auto bad = core::ConfigNode::parse("{best_effort_share: 0.5, slo_guided: maybe}", "c.yaml");
  ASSERT_TRUE(bad);
  EXPECT_FALSE(settings->apply(*bad));
  EXPECT_EQ(settings->of<PriorityFillOptions>("priority-fill").best_effort_share, 0.2);
}

TEST(ModeSettings, UnknownKeyIsNamedWithTheKnownOnes) {
  auto node = core::ConfigNode::parse("{time_slice: 1ms, atom_size: 10}", "opts.yaml");
  ASSERT_TRUE(node);
  const auto settings = ModeSettings::decode(*node);
  ASSERT_FALSE(settings);
  EXPECT_THAT(settings.error().message(), HasSubstr("opts.yaml:1:19: atom_size"));
  EXPECT_THAT(settings.error().message(), HasSubstr("unknown field 'atom_size'"));
  for (const auto key : mode_option_keys()) {
    EXPECT_THAT(settings.error().message(), HasSubstr(std::string(key)));
  }
}

}  // namespace
}  // namespace tessera::gpu
