// read_file: a file whole up to its kind's cap, and errors that say what the system said.
#include "tessera/core/file_read.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tessera::core {
namespace {

using ::testing::HasSubstr;

constexpr FileKind kScenario{.what = "scenario", .domain = Domain::kScenario, .max_bytes = 100};

class ReadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_file_read_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ReadFile, ReadsTheWholeFileUpToTheCap) {
  const std::string text(100, 'a');
  auto r = read_file(write("full.yaml", text), kScenario);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, text);

  auto empty = read_file(write("empty.yaml", ""), kScenario);
  ASSERT_TRUE(empty.has_value()) << empty.error().message();
  EXPECT_EQ(*empty, "");
}

TEST_F(ReadFile, AFileOverTheCapIsRefusedByName) {
  const std::string path = write("big.yaml", std::string(101, 'a'));
  auto r = read_file(path, kScenario);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().domain(), Domain::kScenario);
  EXPECT_EQ(r.error().message(), "scenario '" + path +
                                     "' is larger than 100 bytes, the most tessera reads from one "
                                     "scenario");
}

// A device has no size up front: it is read up to one byte past the cap, then refused.
TEST_F(ReadFile, AnEndlessDeviceStopsAtTheCap) {
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    auto r =
        read_file(device, {.what = "scenario", .domain = Domain::kScenario, .max_bytes = kMiB});
    ASSERT_FALSE(r.has_value()) << device;
    EXPECT_THAT(r.error().message(), HasSubstr(fmt::format("'{}' is larger than 1 MiB", device)));
  }
}

TEST_F(ReadFile, AMissingFileSaysSo) {
  const std::string path = (dir_ / "nope.yaml").string();
  auto r = read_file(path, kScenario);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  EXPECT_EQ(r.error().message(), "cannot open scenario '" + path + "': no such file or directory");

  const std::string under_a_file = write("plain.yaml", "a: 1\n") + "/x.yaml";
  auto r2 = read_file(under_a_file, kScenario);
  ASSERT_FALSE(r2.has_value());
  EXPECT_EQ(r2.error().message(), "cannot open scenario '" + under_a_file + "': not a directory");
}

TEST_F(ReadFile, ADirectorySaysItIsOne) {
  auto r = read_file(dir_.string(), kScenario);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "cannot read scenario '" + dir_.string() + "': it is a directory");
}

// Root reads any file, so as root the read runs in a child process that has become nobody.
TEST_F(ReadFile, AnUnreadableFileSaysPermissionDenied) {
  const std::string path = write("secret.yaml", "a: 1\n");
  std::filesystem::permissions(path, std::filesystem::perms::none);
  EXPECT_EXIT(
      {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) std::exit(2);
        auto r = read_file(path, kScenario);
        std::fprintf(stderr, "%s\n", r ? "read it" : r.error().message().c_str());
        std::exit(r ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "cannot open scenario '.*secret.yaml': permission denied");
}

TEST(DescribeSize, WholeUnitsOrBytes) {
  EXPECT_EQ(describe_size(64 * kMiB), "64 MiB");
  EXPECT_EQ(describe_size(1024 * kMiB), "1 GiB");
  EXPECT_EQ(describe_size(1000), "1000 bytes");
  EXPECT_EQ(describe_size(kMiB + 1), "1048577 bytes");
}

}  // namespace
}  // namespace tessera::core
