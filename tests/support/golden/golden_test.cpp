// The golden helper: where a mismatch is, reported as a line with both versions, and a file that
// matches, differs, or is missing.
#include "support/golden/golden.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::test {
namespace {

TEST(FirstDifference, EqualTextsHaveNone) {
  EXPECT_EQ(first_difference("a\nb\n", "a\nb\n"), "");
  EXPECT_EQ(first_difference("", ""), "");
}

TEST(FirstDifference, NamesTheLineAndShowsBothVersions) {
  EXPECT_EQ(first_difference("a\nbc\nd\n", "a\nbx\nd\n"),
            "first difference at line 2:\n  golden: 'bc'\n  actual: 'bx'");
  EXPECT_EQ(first_difference("xa\n", "ya\n"),
            "first difference at line 1:\n  golden: 'xa'\n  actual: 'ya'");
}

TEST(FirstDifference, ALineOnlyOneSideHasIsTheEndOfTheOther) {
  EXPECT_EQ(first_difference("a\n", "a\nb\n"),
            "first difference at line 2:\n  golden: (end of file)\n  actual: 'b'");
  EXPECT_EQ(first_difference("a\nb\n", "a\n"),
            "first difference at line 2:\n  golden: 'b'\n  actual: (end of file)");
  EXPECT_EQ(first_difference("a", "a\n"),
            "first difference at line 1:\n  golden: 'a'\n  actual: 'a'");
}

TEST(GoldenFile, LiesUnderItsLevelsGoldenFolder) {
  EXPECT_EQ(golden_file("scenario", "demo.json").string(),
            std::string(TESSERA_SOURCE_DIR) + "/tests/scenario/golden/demo.json");
}

std::filesystem::path scratch_dir() {
  return std::filesystem::temp_directory_path() /
         ("tessera_golden_test_" + std::to_string(::getpid()));
}

class ExpectGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv(kUpdateGoldenVariable)) {
      GTEST_SKIP() << "these checks compare, and " << kUpdateGoldenVariable << " asks to write";
    }
    dir_ = scratch_dir();
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "pinned.txt", std::ios::binary) << "one\ntwo\n";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(ExpectGolden, PassesOnTheSameBytes) {
  const auto file = dir_ / "pinned.txt";
  expect_golden(file, "one\ntwo\n");
  const auto text = read_text_file(file);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "one\ntwo\n");
}

TEST_F(ExpectGolden, AMismatchNamesTheFileAndTheLine) {
  const auto file = dir_ / "pinned.txt";
  EXPECT_NONFATAL_FAILURE(expect_golden(file, "one\nthree\n"),
                          "first difference at line 2:\n  golden: 'two'\n  actual: 'three'");
  EXPECT_NONFATAL_FAILURE(expect_golden(file, "one\nthree\n"), file.string());
}

TEST_F(ExpectGolden, AMissingFileSaysHowToCreateIt) {
  // The statement of EXPECT_FATAL_FAILURE cannot use the fixture's members.
  EXPECT_FATAL_FAILURE(expect_golden(scratch_dir() / "absent.txt", "x"), "TESSERA_UPDATE_GOLDEN=1");
  EXPECT_FALSE(read_text_file(dir_ / "absent.txt").has_value());
}

}  // namespace
}  // namespace tessera::test
