#include "tessera/gpu/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

TEST(Registry, MakesEachModeByName) {
  for (const auto& entry : sharing_modes()) {
    auto mode = make_sharing_mode(entry.name, ModeOptions{});
    ASSERT_TRUE(mode) << entry.name;
    EXPECT_EQ((*mode)->name(), entry.name);
    EXPECT_TRUE((*mode)->partitions().empty());  // nothing before attach
  }
}

TEST(Registry, UnknownNameListsTheKnownOnes) {
  const auto mode = make_sharing_mode("mig", ModeOptions{});
  ASSERT_FALSE(mode);
  EXPECT_EQ(mode.error().code(), core::Code::kNotFound);
  EXPECT_THAT(mode.error().message(), HasSubstr("unknown sharing mode 'mig'"));
  EXPECT_THAT(mode.error().message(), HasSubstr("exclusive, time-slicing, mps, static-partitions"));
}

}  // namespace
}  // namespace tessera::gpu
