#include "tessera/gpu/modes/lithos/lithos_options.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/option_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

core::Result<LithosOptions> decode(std::string_view yaml) {
  return test::decode_options<LithosOptions>("lithos", yaml);
}

TEST(LithosOptions, ReadsEveryKey) {
  auto o = decode("{atom_duration: 60us, right_sizing: true, dvfs: on, latency_slip: 1}");
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_EQ(o->atom_duration, core::micros(60));
  EXPECT_TRUE(o->right_sizing);
  EXPECT_TRUE(o->dvfs);
  EXPECT_DOUBLE_EQ(o->latency_slip, 1.0);
}

TEST(LithosOptions, AtomDurationMustBePositive) {
  const auto o = decode("{atom_duration: 0us}");
  ASSERT_FALSE(o);
  EXPECT_THAT(o.error().message(), HasSubstr("atom_duration: must be > 0"));
}

TEST(LithosOptions, LatencySlipIsAFractionInZeroToOne) {
  auto zero = decode("{latency_slip: 0}");
  ASSERT_TRUE(zero) << zero.error().message();
  EXPECT_DOUBLE_EQ(zero->latency_slip, 0.0);
  for (const char* bad : {"1.5", "-0.1"}) {
    const auto o = decode(fmt::format("{{latency_slip: {}}}", bad));
    ASSERT_FALSE(o) << bad;
    EXPECT_THAT(o.error().message(), HasSubstr("latency_slip: latency_slip is the fraction"));
    EXPECT_THAT(o.error().message(), HasSubstr("[0, 1]"));
  }
}

TEST(LithosOptions, SwitchesAreBooleans) {
  const auto o = decode("{right_sizing: sometimes}");
  ASSERT_FALSE(o);
  EXPECT_THAT(o.error().message(), HasSubstr("right_sizing: expected true or false"));
}

}  // namespace
}  // namespace tessera::gpu
