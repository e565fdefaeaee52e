#include "tessera/experiment/data_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace tessera::experiment {
namespace {

using ::testing::HasSubstr;

constexpr const char* kEnvVar = "TESSERA_DATA_DIR";

// A data directory holding traces/t.csv; the flag and the environment are restored afterwards.
class DataDir : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* env = std::getenv(kEnvVar)) saved_env_ = env;
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("tessera_data_dir_test_{}", ::getpid());
    std::filesystem::create_directories(dir_ / "traces");
    std::ofstream(dir_ / "traces" / "t.csv") << "arrival\n";
  }
  void TearDown() override {
    set_data_dir("");
    if (saved_env_) {
      ::setenv(kEnvVar, saved_env_->c_str(), 1);
    } else {
      ::unsetenv(kEnvVar);
    }
    std::filesystem::remove_all(dir_);
  }

  std::optional<std::string> saved_env_;
  std::filesystem::path dir_;
};

TEST_F(DataDir, TheFlagComesBeforeTheEnvironment) {
  ::setenv(kEnvVar, "/nonexistent", 1);
  set_data_dir(dir_.string());
  const auto file = data_file("traces/t.csv");
  ASSERT_TRUE(file.has_value()) << file.error().message();
  EXPECT_EQ(*file, (dir_ / "traces" / "t.csv").string());
}

TEST_F(DataDir, TheEnvironmentComesBeforeTheDefault) {
  ::setenv(kEnvVar, dir_.c_str(), 1);
  EXPECT_EQ(data_dir(), dir_.string());
  EXPECT_TRUE(data_file("traces/t.csv").has_value());
}

TEST_F(DataDir, WithNeitherItIsSharedDataBesideTheWorkingDirectory) {
  ::unsetenv(kEnvVar);
  EXPECT_EQ(data_dir(), "../shared/data");
}

TEST_F(DataDir, AMissingFileNamesThePathTriedAndBothWaysToSetTheDirectory) {
  set_data_dir(dir_.string());
  const auto file = data_file("traces/missing.csv");
  ASSERT_FALSE(file.has_value());
  const std::string message = file.error().message();
  EXPECT_THAT(message, HasSubstr((dir_ / "traces" / "missing.csv").string()));
  EXPECT_THAT(message, HasSubstr("(--data-dir)"));
  EXPECT_THAT(message, HasSubstr("--data-dir DIR or the environment variable TESSERA_DATA_DIR"));
}

}  // namespace
}  // namespace tessera::experiment
