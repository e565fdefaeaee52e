#include "tessera/gpu/modes/time_slicing/time_slicing_options.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/option_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

core::Result<TimeSlicingOptions> decode(std::string_view yaml) {
  return test::decode_options<TimeSlicingOptions>("time-slicing", yaml);
}

TEST(TimeSlicingOptions, ReadsBothKeysAndKeepsDefaultsForTheRest) {
  auto o = decode("{time_slice: 500us, context_switch: 0us}");
  ASSERT_TRUE(o) << o.error().message();
  EXPECT_EQ(o->time_slice, core::micros(500));
  EXPECT_EQ(o->context_switch, 0);
  auto d = decode("{latency_slip: 0.5}");  // another mode's key
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->time_slice, TimeSlicingOptions{}.time_slice);
  EXPECT_EQ(d->context_switch, TimeSlicingOptions{}.context_switch);
}

TEST(TimeSlicingOptions, SliceMustBePositive) {
  const auto o = decode("{time_slice: 0us}");
  ASSERT_FALSE(o);
  EXPECT_THAT(o.error().message(), HasSubstr("opts.yaml:1:14: time_slice: must be > 0"));
}

TEST(TimeSlicingOptions, SwitchCostCannotBeNegative) {
  const auto o = decode("{context_switch: -1us}");
  ASSERT_FALSE(o);
  EXPECT_THAT(o.error().message(), HasSubstr("context_switch"));
  EXPECT_THAT(o.error().message(), HasSubstr("non-negative"));
}

}  // namespace
}  // namespace tessera::gpu
