#include "tessera/gpu/modes/priority_fill/priority_fill_options.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/option_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

core::Result<PriorityFillOptions> decode(std::string_view yaml) {
  return test::decode_options<PriorityFillOptions>("priority-fill", yaml);
}

TEST(PriorityFillOptions, ShareIsAFractionInZeroToOne) {
  for (const double share : {0.01, 0.1, 1.0}) {
    auto o = decode(fmt::format("{{best_effort_share: {}}}", share));
    ASSERT_TRUE(o) << o.error().message();
    EXPECT_DOUBLE_EQ(o->best_effort_share, share);
  }
  for (const char* bad : {"0", "-0.2", "1.5"}) {
    const auto o = decode(fmt::format("{{best_effort_share: {}}}", bad));
    ASSERT_FALSE(o) << bad;
    EXPECT_THAT(o.error().message(), HasSubstr("best_effort_share is a fraction of the SMs"));
    EXPECT_THAT(o.error().message(), HasSubstr(bad));
  }
}

TEST(PriorityFillOptions, AbsentKeepsTheDefault) {
  const auto o = decode("{}");
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_DOUBLE_EQ(o->best_effort_share, PriorityFillOptions{}.best_effort_share);
}

}  // namespace
}  // namespace tessera::gpu
