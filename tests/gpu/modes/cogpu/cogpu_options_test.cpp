#include "tessera/gpu/modes/cogpu/cogpu_options.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/option_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

// cogpu and tpot-first share these options, so each test runs both entries.
class CoGpuOptionsOf : public ::testing::TestWithParam<const char*> {};

TEST_P(CoGpuOptionsOf, ReadsBothRemapKeys) {
  auto o =
      test::decode_options<CoGpuOptions>(GetParam(), "{remap_cost: 0us, remap_min_residency: 7ms}");
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_EQ(o->remap_cost, 0);
  EXPECT_EQ(o->remap_min_residency, core::millis(7));
}

TEST_P(CoGpuOptionsOf, CostsCannotBeNegative) {
  for (const char* key : {"remap_cost", "remap_min_residency"}) {
    const auto o = test::decode_options<CoGpuOptions>(GetParam(), fmt::format("{{{}: -5us}}", key));
    ASSERT_FALSE(o) << key;
    EXPECT_THAT(o.error().message(), HasSubstr(key));
    EXPECT_THAT(o.error().message(), HasSubstr("non-negative"));
  }
}

INSTANTIATE_TEST_SUITE_P(Entries, CoGpuOptionsOf, ::testing::Values("cogpu", "tpot-first"));

}  // namespace
}  // namespace tessera::gpu
