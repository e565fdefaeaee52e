#include "tessera/gpu/modes/mps/mps_options.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/option_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

core::Result<MpsOptions> decode(std::string_view yaml) {
  return test::decode_options<MpsOptions>("mps", yaml);
}

TEST(MpsOptions, PercentageIsInZeroToHundred) {
  for (const double pct : {0.5, 30.0, 100.0}) {
    auto o = decode(fmt::format("{{mps_active_thread_percentage: {}}}", pct));
    ASSERT_TRUE(o) << o.error().message();
    EXPECT_DOUBLE_EQ(o->active_thread_percentage, pct);
  }
  for (const char* bad : {"0", "-5", "100.5"}) {
    const auto o = decode(fmt::format("{{mps_active_thread_percentage: {}}}", bad));
    ASSERT_FALSE(o) << bad;
    EXPECT_THAT(o.error().message(),
                HasSubstr("mps_active_thread_percentage: must be in (0, 100]"));
  }
}

TEST(MpsOptions, PercentageMustBeANumber) {
  const auto o = decode("{mps_active_thread_percentage: half}");
  ASSERT_FALSE(o);
  EXPECT_THAT(o.error().message(), HasSubstr("'half'"));
}

}  // namespace
}  // namespace tessera::gpu
