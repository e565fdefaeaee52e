#include "tessera/device/argument_checks.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"

namespace tessera::device {
namespace {

using ::testing::HasSubstr;

const hw::GpuSpec kGpu = test::TestGpu().sms(16).build();  // clocks 500 to 1000 MHz

TEST(CheckStreamId, AcceptsIdsHandedOutAndNamesTheCountOtherwise) {
  EXPECT_TRUE(check_stream_id(0, 1));
  EXPECT_TRUE(check_stream_id(2, 3));
  const auto none = check_stream_id(0, 0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), core::Code::kNotFound);
  const auto past = check_stream_id(3, 3);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code(), core::Code::kNotFound);
  EXPECT_THAT(past.error().message(),
              HasSubstr("stream 3 does not exist on this device (3 streams created); use an id "
                        "returned by create_stream"));
}

TEST(CheckSmMask, AcceptsSetsOfExistingSmsAndTheEmptySet) {
  EXPECT_TRUE(check_sm_mask(kGpu, SmMask{}));
  EXPECT_TRUE(check_sm_mask(kGpu, SmMask::first(16)));
  EXPECT_TRUE(check_sm_mask(kGpu, SmMask::range(15, 16)));
}

TEST(CheckSmMask, NamesTheFirstSmTheGpuLacks) {
  const auto st = check_sm_mask(kGpu, SmMask::range(10, 20));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(st.error().message(),
              HasSubstr("the stream's SM set names SM 16, but test-gpu has 16 SMs (0 to 15); "
                        "build the set from SMs that exist"));
  SmMask last;
  last.set(kMaxSms - 1);
  EXPECT_THAT(check_sm_mask(kGpu, last).error().message(),
              HasSubstr(fmt::format("names SM {}", kMaxSms - 1)));
}

TEST(CheckSubmittedSequence, RefusesANullSequenceNamingTheStream) {
  EXPECT_TRUE(check_submitted_sequence(4, test::sequence_of({test::make_kernel("k", 1, 1, 1)})));
  const auto st = check_submitted_sequence(4, nullptr);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(st.error().message(),
              HasSubstr("stream 4: submit needs a kernel sequence, got a null pointer"));
}

TEST(ValidateStreamSequence, PrefixesTheSequencesErrorWithTheStream) {
  EXPECT_TRUE(
      validate_stream_sequence(kGpu, 2, *test::sequence_of({test::make_kernel("k", 4, 1, 1)})));
  const auto empty = validate_stream_sequence(kGpu, 2, workload::KernelSequence{});
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message(), HasSubstr("stream 2: "));
  EXPECT_THAT(empty.error().message(), HasSubstr("no kernels"));
  const auto no_grid = validate_stream_sequence(
      kGpu, 7, *test::sequence_of({test::make_kernel("empty-grid", 0, 1, 1)}));
  ASSERT_FALSE(no_grid);
  EXPECT_THAT(no_grid.error().message(), HasSubstr("stream 7: "));
  EXPECT_THAT(no_grid.error().message(), HasSubstr("'empty-grid'"));
}

TEST(CheckClockMhz, AcceptsTheRangeInclusiveAndRefusesOutsideAndNan) {
  EXPECT_TRUE(check_clock_mhz(kGpu, 500));
  EXPECT_TRUE(check_clock_mhz(kGpu, 750));
  EXPECT_TRUE(check_clock_mhz(kGpu, 1000));
  for (const double mhz : {499.0, 1000.5, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    const auto st = check_clock_mhz(kGpu, mhz);
    ASSERT_FALSE(st) << mhz;
    EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
  }
  EXPECT_THAT(check_clock_mhz(kGpu, 1200).error().message(),
              HasSubstr("clock 1200 MHz is outside test-gpu's range of 500 to 1000 MHz; pick a "
                        "clock in it"));
}

}  // namespace
}  // namespace tessera::device
