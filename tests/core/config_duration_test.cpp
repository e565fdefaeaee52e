#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/core/config.hpp"

namespace tessera::core {
namespace {

using ::testing::HasSubstr;

TEST(ParseDuration, AcceptsEveryUnit) {
  EXPECT_EQ(parse_duration("250ms").value(), millis(250));
  EXPECT_EQ(parse_duration("1.5s").value(), millis(1500));
  EXPECT_EQ(parse_duration("40us").value(), micros(40));
  EXPECT_EQ(parse_duration("100ns").value(), 100);
  EXPECT_EQ(parse_duration("2min").value(), seconds(120));
  EXPECT_EQ(parse_duration("1h").value(), seconds(3600));
  EXPECT_EQ(parse_duration("0s").value(), 0);
  EXPECT_EQ(parse_duration("0.5ms").value(), micros(500));
  EXPECT_EQ(parse_duration("5 ms").value(), millis(5));
  EXPECT_EQ(parse_duration("+3s").value(), seconds(3));
}

TEST(ParseDuration, RoundsToTheNearestNanosecond) {
  EXPECT_EQ(parse_duration("1.005ms").value(), 1'005'000);
  EXPECT_EQ(parse_duration("0.4ns").value(), 0);
  EXPECT_EQ(parse_duration("2.6ns").value(), 3);
}

TEST(ParseDuration, RejectsBareNumbersSoUnitsAreNeverGuessed) {
  auto r = parse_duration("250");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().domain(), Domain::kConfig);
  EXPECT_EQ(r.error().code(), Code::kParse);
  EXPECT_THAT(r.error().message(), HasSubstr("'250'"));
  EXPECT_THAT(r.error().message(), HasSubstr("ns, us, ms, s, min, h"));
}

TEST(ParseDuration, RejectsNegativeAndMalformed) {
  for (const char* bad : {"-5ms", "-0.1s", "ms", "s", "", "fast", "5 parsecs", "5mss", "1,5s",
                          "+-5ms", "nans", "infs", "5 MS", " 5ms", "1e400s"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ParseDuration, RejectsValuesBeyondTheNanosecondRange) {
  // About 292 years fits in int64 nanoseconds; 1e300 seconds does not.
  EXPECT_TRUE(parse_duration("100000h").has_value());
  auto r = parse_duration("1e300s");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("too long"));
  EXPECT_FALSE(parse_duration("9300000000000000000ns").has_value());
}

TEST(ConfigDuration, NodeErrorsCarryLocationAndPath) {
  auto root = ConfigNode::parse("slo:\n  ttft: 250\n", "demo.yaml");
  ASSERT_TRUE(root.has_value());
  auto r = root->at("slo")->at("ttft")->as_duration();
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("demo.yaml:2:9: slo.ttft: expected a non-negative "
                                             "duration with a unit"));
  EXPECT_EQ(r.error().domain(), Domain::kConfig);
}

}  // namespace
}  // namespace tessera::core
