// `tessera validate --report` opened in headless Chromium: every plot is drawn as SVG marks, and
// the browser logs no error. Skipped where no chromium binary is on PATH.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "handmade_rows.hpp"
#include "headless_chromium.hpp"
#include "tessera/cli/command_line.hpp"
#include "tessera/report/html_page.hpp"
#include "tessera/validation/html_report.hpp"

namespace tessera::test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::filesystem::path kWorkDir = TESSERA_REPORT_TEST_DIR;

// The page's DOM after its scripts ran; fails the test on a browser error.
std::string rendered_dom(const std::filesystem::path& chromium, const std::filesystem::path& page) {
  const ChromiumRun run = run_chromium(chromium, page, {"--dump-dom"}, kWorkDir);
  EXPECT_EQ(run.exit_status, 0) << run.log;
  EXPECT_THAT(console_errors(run.log), IsEmpty()) << page;
  return run.stdout_text;
}

void expect_drawn(const std::vector<std::string>& plots, std::size_t points, std::size_t bars) {
  ASSERT_EQ(plots.size(), 2u);
  for (const std::string& plot : plots) EXPECT_THAT(plot, HasSubstr("<svg")) << plot.substr(0, 300);
  for (const std::string& plot : plots) EXPECT_THAT(plot, HasSubstr("class=\"marks\""));
  EXPECT_THAT(plots[0], HasSubstr("class=\"mark-symbol role-mark"));
  EXPECT_THAT(plots[0], HasSubstr("class=\"mark-area role-mark"));  // the +-10% band
  EXPECT_THAT(plots[0], HasSubstr("class=\"mark-line role-mark"));  // y = x
  EXPECT_EQ(count(plots[0], "aria-roledescription=\"point\""), points);
  EXPECT_THAT(plots[1], HasSubstr("class=\"mark-rect role-mark"));
  EXPECT_EQ(count(plots[1], "aria-roledescription=\"bar\""), bars);
}

class ReportInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (!chromium_)
      GTEST_SKIP() << "no chromium binary on PATH (scripts/install-deps.sh installs it)";
    std::filesystem::create_directories(kWorkDir);
  }
  std::optional<std::filesystem::path> chromium_;
};

TEST_F(ReportInBrowser, HandMadeRowsWithAHostileSourceAreAllDrawn) {
  validation::Predictor predictor;
  const auto report = validation::validate(handmade_rows(), predictor);
  ASSERT_TRUE(report.has_value()) << report.error().message();
  const std::filesystem::path page = kWorkDir / "handmade-report.html";
  {
    std::ofstream out(page);
    out << validation::format_html_report(*report, "Measurements: hand-made.");
  }
  const std::string dom = rendered_dom(*chromium_, page);
  const std::vector<std::string> plots = plot_elements(dom);
  expect_drawn(plots, report->rows.size(), 2 * report->categories.size());
  // The source stayed text, in the worst rows' table and in each of its five points' labels: its
  // closing tags did not end the data's <script>. (The DOM writes only & < > as entities.)
  std::string text(kHostileSource);
  for (const auto& [from, to] : {std::pair{"<", "&lt;"}, std::pair{">", "&gt;"}}) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 4)) {
      text.replace(at, 1, to);
    }
  }
  EXPECT_THAT(dom, HasSubstr(fmt::format("<td>{}:2</td>", text)));
  ASSERT_EQ(plots.size(), 2u);
  EXPECT_EQ(count(plots[0], fmt::format("source (file:line): {}:", text)), 5u);
}

TEST_F(ReportInBrowser, AShippedProfilesReportDrawsEveryPlotAndLeavesAScreenshot) {
  const std::filesystem::path page = kWorkDir / "validate-report.html";
  std::filesystem::remove(page);
  const std::string profile = "inference_sim_kernels_h100/gemm/h100/data.csv";
  const char* argv[] = {"tessera",       "--data-dir", TESSERA_SHARED_DATA_DIR,
                        "validate",      "-q",         "--profile",
                        profile.c_str(), "--report",   page.c_str()};
  cli::CommandLine line;
  testing::internal::CaptureStdout();
  const int status = line.main(static_cast<int>(std::size(argv)), argv);
  const std::string text = testing::internal::GetCapturedStdout();
  ASSERT_EQ(status, 0) << text;
  ASSERT_TRUE(std::filesystem::exists(page));

  // The page's first table is the text report's: the same categories and row counts.
  const std::string dom = rendered_dom(*chromium_, page);
  EXPECT_THAT(text, HasSubstr("GEMM, M <= 64"));
  EXPECT_THAT(dom, HasSubstr("<td>GEMM, M &lt;= 64</td><td class=\"num\">16</td>"));
  // One point per row compared; the three GEMM categories each have rows fitted on and not.
  std::smatch compared;
  ASSERT_TRUE(std::regex_search(text, compared, std::regex("([0-9]+) rows compared"))) << text;
  expect_drawn(plot_elements(dom), std::stoul(compared[1]), 12);

  const std::filesystem::path screenshot =
      std::filesystem::path(TESSERA_BINARY_DIR) / "report-screenshot.png";
  std::filesystem::remove(screenshot);
  const ChromiumRun shot =
      run_chromium(*chromium_, page,
                   {"--screenshot=" + screenshot.string(), "--window-size=1200,1600"}, kWorkDir);
  EXPECT_EQ(shot.exit_status, 0) << shot.log;
  EXPECT_THAT(console_errors(shot.log), IsEmpty());
  // A PNG of the window's size: the signature, then IHDR's width and height (big-endian).
  std::ifstream png(screenshot, std::ios::binary);
  std::string head(24, '\0');
  ASSERT_TRUE(png.read(head.data(), 24)) << screenshot;
  EXPECT_EQ(head.substr(1, 3), "PNG");
  const auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(head[at + i]);
    return v;
  };
  EXPECT_EQ(be32(16), 1200u);
  EXPECT_EQ(be32(20), 1600u);
}

}  // namespace
}  // namespace tessera::test
