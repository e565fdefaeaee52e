// `tessera experiment NAME --report`'s page: each configuration's claims, table, assumptions and
// the run's own sections under the configuration's name (training-colocation, two
// configurations); drawn in headless Chromium without an error (hybrid; skipped where no chromium
// binary is on PATH); and the studies that run no scenario refuse the flag, saying so.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "headless_chromium.hpp"
#include "run_cli.hpp"
#include "tessera/experiment/html_report.hpp"
#include "tessera/experiment/registry.hpp"
#include "tessera/report/html_page.hpp"
#include "tessera/scenario/html_report.hpp"

namespace tessera::experiment {
namespace {

using test::count;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const std::filesystem::path kWorkDir = TESSERA_REPORT_TEST_DIR;

// training-colocation has two configurations (high and low contention); 2 simulated seconds each.
ExperimentResult run_two_configurations() {
  auto entry = find_experiment("training-colocation");
  EXPECT_TRUE(entry.has_value());
  const Experiment& e = *(*entry)->as<Experiment>();
  auto r = run_experiment(e, Overrides{.duration = core::seconds(2), .seed = std::nullopt},
                          [](const Config&) {
                            scenario::RunOptions options;
                            options.keep_samples = true;
                            return options;
                          });
  EXPECT_TRUE(r.has_value()) << r.error().message();
  return std::move(*r);
}

TEST(ExperimentReportPage, EachConfigurationHasItsClaimsTableAndRunUnderItsName) {
  const ExperimentResult result = run_two_configurations();
  ASSERT_EQ(result.configs.size(), 2u);
  const std::string html = format_html_report(result);
  EXPECT_THAT(html, HasSubstr("<title>tessera experiment: training-colocation</title>"));
  std::size_t run_plots = 0;
  for (const ConfigResult& c : result.configs) {
    const std::string name = report::escape_html(c.config->label);
    for (const char* section : {"Setup", "Results", "Throughput"}) {
      EXPECT_THAT(html, HasSubstr(fmt::format("<h2>{}: {}</h2>", name, section)));
    }
    EXPECT_THAT(html, HasSubstr(report::escape_html(source_line(*result.experiment, c.scenario))));
    for (const auto& mode : c.report.modes) {
      EXPECT_THAT(html, HasSubstr(fmt::format("<td>{}</td>", mode.mode)));
    }
    // Exactly the plots the run's own page has.
    run_plots += count(scenario::format_html_report(c.report), "<div class=\"plot\"");
  }
  EXPECT_EQ(count(html, "The paper&#39;s claims, computed from this run"), 2u);
  EXPECT_EQ(count(html, "The experiment&#39;s figures per mode"), 2u);
  EXPECT_EQ(count(html, "<div class=\"plot\""), run_plots);
  EXPECT_GE(run_plots, result.configs.size());  // a throughput plot each, at least
}

TEST(ExperimentReportPage, StudiesThatRunNoScenarioRefuseTheFlag) {
  for (const char* name : {"mig-ml", "flextopo-preemption"}) {
    const test::CliRun run =
        test::run_cli({"tessera", "experiment", name, "-q", "--report", "/tmp/unused.html"});
    EXPECT_EQ(run.status, 1) << name;
    EXPECT_THAT(run.err, HasSubstr("--report do not apply")) << name;
  }
}

// `tessera experiment NAME -q --duration DURATION --report` written to kWorkDir/FILE, and the
// page as headless Chromium renders it.
struct RenderedReport {
  std::filesystem::path page;
  std::string html;
  test::ChromiumRun dom;
};

std::optional<RenderedReport> render_report(const std::filesystem::path& chromium, const char* name,
                                            const char* duration, const char* file) {
  std::filesystem::create_directories(kWorkDir);
  RenderedReport out{.page = kWorkDir / file, .html = {}, .dom = {}};
  std::filesystem::remove(out.page);
  const test::CliRun made = test::run_cli(
      {"tessera", "experiment", name, "-q", "--duration", duration, "--report", out.page.c_str()});
  EXPECT_EQ(made.status, 0) << made.err;
  if (made.status != 0) return std::nullopt;
  std::ifstream in(out.page);
  out.html.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  out.dom = test::run_chromium(chromium, out.page, {"--dump-dom"}, kWorkDir);
  EXPECT_EQ(out.dom.exit_status, 0) << out.dom.log;
  EXPECT_THAT(test::console_errors(out.dom.log), IsEmpty());
  return out;
}

TEST(ExperimentReportInBrowser, EveryPlotIsDrawnAndAScreenshotIsLeft) {
  const std::optional<std::filesystem::path> chromium = test::find_chromium();
  if (!chromium) GTEST_SKIP() << "no chromium binary on PATH (scripts/install-deps.sh installs it)";
  // hybrid: one configuration, an inference tenant with an SLO beside a trainer.
  const auto report = render_report(*chromium, "hybrid", "3s", "experiment-report.html");
  ASSERT_TRUE(report);
  const std::filesystem::path& page = report->page;
  const std::string& html = report->html;
  const test::ChromiumRun& run = report->dom;
  const std::vector<std::string> plots = test::plot_elements(run.stdout_text);
  EXPECT_EQ(count(html, "<div class=\"plot\""), 4u);
  ASSERT_EQ(plots.size(), 4u);  // hp's TTFT and TPOT CDFs, throughput, SLO attainment
  for (const std::string& plot : plots) {
    EXPECT_THAT(plot, HasSubstr("<svg")) << plot.substr(0, 300);
    EXPECT_THAT(plot, HasSubstr("class=\"marks\""));
  }
  const std::filesystem::path screenshot =
      std::filesystem::path(TESSERA_BINARY_DIR) / "experiment-report-screenshot.png";
  std::filesystem::remove(screenshot);
  const test::ChromiumRun shot = test::run_chromium(
      *chromium, page, {"--screenshot=" + screenshot.string(), "--window-size=1200,3000"},
      kWorkDir);
  EXPECT_EQ(shot.exit_status, 0) << shot.log;
  EXPECT_TRUE(std::filesystem::exists(screenshot));
}

TEST(ExperimentReportInBrowser, TheFrontierIsDrawnWithEveryPolicysPoints) {
  const std::optional<std::filesystem::path> chromium = test::find_chromium();
  if (!chromium) GTEST_SKIP() << "no chromium binary on PATH (scripts/install-deps.sh installs it)";
  const auto report = render_report(*chromium, "frontier", "2s", "frontier-report.html");
  ASSERT_TRUE(report);
  EXPECT_EQ(count(report->html, "Frontier</h2>"), 1u);
  const test::ChromiumRun& run = report->dom;
  const std::vector<std::string> plots = test::plot_elements(run.stdout_text);
  // The frontier first (it follows the figures), then the run's own plots.
  ASSERT_GE(plots.size(), 1u);
  const std::string& frontier = plots.front();
  EXPECT_THAT(frontier, HasSubstr("hp p99 x alone against train thr x alone"));
  EXPECT_THAT(frontier, HasSubstr("class=\"marks\""));
  // Each point is labelled: the baselines by name, priority-fill's by its share.
  for (const char* label : {"lithos", "tpot-first", "mps", "0.05", "0.75"}) {
    EXPECT_THAT(frontier, HasSubstr(fmt::format(">{}</text>", label))) << label;
  }
  // Exclusive runs each tenant on a GPU of its own: not a point on the frontier.
  EXPECT_THAT(frontier, Not(HasSubstr(">exclusive</text>")));
}

}  // namespace
}  // namespace tessera::experiment
