// `tessera simulate --report` opened in headless Chromium: every plot is drawn as SVG marks (a
// line per mode in each CDF, the targets' rules, a bar per mode and tenant, the memory's ticks),
// and the browser logs no error. Skipped where no chromium binary is on PATH.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "headless_chromium.hpp"
#include "small_run.hpp"
#include "tessera/cli/command_line.hpp"

namespace tessera::test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::filesystem::path kWorkDir = TESSERA_REPORT_TEST_DIR;

TEST(SimulateReportInBrowser, EveryPlotIsDrawnAndAScreenshotIsLeft) {
  const std::optional<std::filesystem::path> chromium = find_chromium();
  if (!chromium) GTEST_SKIP() << "no chromium binary on PATH (scripts/install-deps.sh installs it)";
  std::filesystem::create_directories(kWorkDir);
  const std::filesystem::path yaml = kWorkDir / "small-run.yaml";
  const std::filesystem::path page = kWorkDir / "simulate-report.html";
  std::ofstream(yaml) << kSmallRun;
  std::filesystem::remove(page);
  const char* argv[] = {"tessera", "simulate", yaml.c_str(), "-q", "--report", page.c_str()};
  cli::CommandLine line;
  testing::internal::CaptureStdout();
  const int status = line.main(static_cast<int>(std::size(argv)), argv);
  const std::string text = testing::internal::GetCapturedStdout();
  ASSERT_EQ(status, 0) << text;
  ASSERT_TRUE(std::filesystem::exists(page));

  const ChromiumRun run = run_chromium(*chromium, page, {"--dump-dom"}, kWorkDir);
  EXPECT_EQ(run.exit_status, 0) << run.log;
  EXPECT_THAT(console_errors(run.log), IsEmpty());
  const std::vector<std::string> plots = plot_elements(run.stdout_text);
  ASSERT_EQ(plots.size(), 5u);  // chat's TTFT and TPOT CDFs, throughput, SLO, memory
  for (const std::string& plot : plots) {
    EXPECT_THAT(plot, HasSubstr("<svg")) << plot.substr(0, 300);
    EXPECT_THAT(plot, HasSubstr("class=\"marks\""));
  }
  for (std::size_t cdf : {0u, 1u}) {
    EXPECT_EQ(count(plots[cdf], "aria-roledescription=\"line mark\""), 2u);  // one per mode
    EXPECT_EQ(count(plots[cdf], "class=\"mark-rule role-mark"), 1u);         // the target
  }
  EXPECT_EQ(count(plots[2], "aria-roledescription=\"bar\""), 4u);   // 2 modes x 2 tenants
  EXPECT_EQ(count(plots[3], "aria-roledescription=\"bar\""), 2u);   // chat per mode
  EXPECT_EQ(count(plots[4], "aria-roledescription=\"bar\""), 6u);   // 2 modes x 3 parts
  EXPECT_EQ(count(plots[4], "aria-roledescription=\"tick\""), 4u);  // budget and peak per mode

  const std::filesystem::path screenshot =
      std::filesystem::path(TESSERA_BINARY_DIR) / "simulate-report-screenshot.png";
  std::filesystem::remove(screenshot);
  const ChromiumRun shot =
      run_chromium(*chromium, page,
                   {"--screenshot=" + screenshot.string(), "--window-size=1200,3000"}, kWorkDir);
  EXPECT_EQ(shot.exit_status, 0) << shot.log;
  EXPECT_THAT(console_errors(shot.log), IsEmpty());
  std::ifstream png(screenshot, std::ios::binary);
  std::string head(4, '\0');
  ASSERT_TRUE(png.read(head.data(), 4)) << screenshot;
  EXPECT_EQ(head.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace tessera::test
