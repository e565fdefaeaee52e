#include "tessera/report/vega_assets.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tessera::report {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::filesystem::path kJs = std::filesystem::path(TESSERA_SOURCE_DIR) / "third_party/js";

TEST(ReportVegaAssets, TheThreePackagesInLoadOrderAtThePinnedVersions) {
  const auto scripts = vega_scripts();
  ASSERT_EQ(scripts.size(), 3u);
  EXPECT_EQ(scripts[0].package, "vega");
  EXPECT_EQ(scripts[1].package, "vega-lite");
  EXPECT_EQ(scripts[2].package, "vega-embed");
  const auto pinned = nlohmann::json::parse(read_file(kJs / "package.json"))["dependencies"];
  for (const InlineScript& s : scripts) {
    EXPECT_EQ(pinned.at(std::string(s.package)), std::string(s.version)) << s.package;
  }
  EXPECT_EQ(scripts[0].version.substr(0, 2), "5.");
  EXPECT_EQ(scripts[1].version.substr(0, 2), "5.");
  EXPECT_EQ(scripts[2].version.substr(0, 2), "6.");
}

TEST(ReportVegaAssets, EachScriptIsTheInstalledFileWithoutItsSourceMapComment) {
  for (const InlineScript& s : vega_scripts()) {
    std::string file = read_file(kJs / "node_modules" / s.package / "build" /
                                 (std::string(s.package) + ".min.js"));
    ASSERT_FALSE(file.empty()) << s.package;
    const std::size_t map = file.rfind("//# sourceMappingURL=");
    if (map != std::string::npos) file.resize(map);
    EXPECT_EQ(script_text(s), file) << s.package;
    EXPECT_GT(s.chunks.size(), 0u);
    // Under the 64 KiB a compiler must accept in one string literal.
    for (std::string_view chunk : s.chunks) EXPECT_LT(chunk.size(), 65536u) << s.package;
  }
}

}  // namespace
}  // namespace tessera::report
