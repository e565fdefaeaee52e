#include "tessera/core/log.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::core {
namespace {

using ::testing::HasSubstr;

class LogLevel : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = logger().level(); }
  void TearDown() override { logger().set_level(saved_); }
  spdlog::level::level_enum saved_{};
};

TEST_F(LogLevel, AcceptsEveryDocumentedLevel) {
  const std::pair<const char*, spdlog::level::level_enum> cases[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off},
  };
  for (const auto& [text, level] : cases) {
    ASSERT_TRUE(set_log_level(text).has_value()) << text;
    EXPECT_EQ(logger().level(), level) << text;
  }
}

TEST_F(LogLevel, RejectsUnknownLevelAndKeepsTheOldOne) {
  ASSERT_TRUE(set_log_level("info").has_value());
  auto r = set_log_level("verbose");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("'verbose'"));
  EXPECT_THAT(r.error().message(), HasSubstr("trace, debug, info, warn, error or off"));
  EXPECT_EQ(logger().level(), spdlog::level::info);

  EXPECT_FALSE(set_log_level("").has_value());
  EXPECT_FALSE(set_log_level("INFO ").has_value());
}

TEST_F(LogLevel, IsOneNamedLogger) {
  EXPECT_EQ(&logger(), &logger());
  EXPECT_EQ(logger().name(), "tessera");
}

}  // namespace
}  // namespace tessera::core
