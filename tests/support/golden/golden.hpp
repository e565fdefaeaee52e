#pragma once
// Golden files: pinned outputs under tests/<dir>/golden/ that a test compares its output with.
// When a change moves an output on purpose, run the test with TESSERA_UPDATE_GOLDEN=1 to rewrite
// the files it compares with, and explain the change in the commit.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace tessera::test {

inline constexpr const char* kUpdateGoldenVariable = "TESSERA_UPDATE_GOLDEN";

// tests/<dir>/golden/<name> in the source tree.
inline std::filesystem::path golden_file(std::string_view dir, std::string_view name) {
  return std::filesystem::path(TESSERA_SOURCE_DIR) / "tests" / dir / "golden" / name;
}

// The whole file, or nothing if it cannot be read.
inline std::optional<std::string> read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Where `actual` first departs from `golden`, line by line (1-based), with both versions of that
// line; empty if they are equal.
inline std::string first_difference(std::string_view golden, std::string_view actual) {
  if (golden == actual) return "";
  const auto at = static_cast<std::size_t>(
      std::mismatch(golden.begin(), golden.end(), actual.begin(), actual.end()).first -
      golden.begin());
  std::size_t begin = 0;  // of the line holding the first differing byte
  if (at > 0) {
    const auto newline = golden.rfind('\n', at - 1);
    if (newline != std::string_view::npos) begin = newline + 1;
  }
  const auto line_of = [begin](std::string_view text) -> std::string {
    if (begin >= text.size()) return "(end of file)";
    const auto end = text.find('\n', begin);
    // Appended, not "'" + string: GCC 12 at -O3 flags that falsely (-Wrestrict, PR105651).
    std::string line(1, '\'');
    line += text.substr(begin, end - begin);
    line += '\'';
    return line;
  };
  const auto number = std::count(golden.begin(), golden.begin() + begin, '\n') + 1;
  std::ostringstream out;
  out << "first difference at line " << number << ":\n  golden: " << line_of(golden)
      << "\n  actual: " << line_of(actual);
  return out.str();
}

// Expects `actual` to equal the golden file byte for byte; with TESSERA_UPDATE_GOLDEN set, writes
// `actual` to it instead and skips the test, naming the file.
inline void expect_golden(const std::filesystem::path& file, std::string_view actual) {
  if (std::getenv(kUpdateGoldenVariable)) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write golden file " << file.string();
    GTEST_SKIP() << "wrote golden file " << file.string();
  }
  const auto golden = read_text_file(file);
  ASSERT_TRUE(golden.has_value()) << "cannot read golden file " << file.string()
                                  << "; create it with " << kUpdateGoldenVariable << "=1";
  EXPECT_TRUE(*golden == actual) << "output differs from golden file " << file.string() << "; "
                                 << first_difference(*golden, actual)
                                 << "\nif the change is on purpose, rerun with "
                                 << kUpdateGoldenVariable << "=1 and explain it in the commit";
}

}  // namespace tessera::test
