#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "handmade_rows.hpp"
#include "headless_chromium.hpp"
#include "run_cli.hpp"
#include "support/csv.hpp"
#include "tessera/report/html_page.hpp"
#include "tessera/validation/html_report.hpp"

namespace tessera::validation {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ValidationReport handmade_report() {
  Predictor predictor;
  auto report = validate(test::handmade_rows(), predictor);
  EXPECT_TRUE(report.has_value()) << report.error().message();
  return std::move(report).value();
}

TEST(ReportValidatePage, TheScatterHasOnePointPerRowWithItsConfigurationAndSource) {
  const ValidationReport r = handmade_report();
  ASSERT_EQ(r.rows.size(), 7u);
  const nlohmann::json spec = simulated_vs_measured_spec(r);
  ASSERT_EQ(spec["layer"].size(), 3u);
  const nlohmann::json& points = spec["layer"][2]["data"]["values"];
  ASSERT_EQ(points.size(), r.rows.size());
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(points[i]["source"], r.rows[i].measurement.source);
    EXPECT_EQ(points[i]["category"], r.rows[i].category);
    EXPECT_NEAR(points[i]["measured_us"].get<double>(), r.rows[i].measurement.measured_ns / 1e3,
                1e-3);
    EXPECT_NEAR(points[i]["simulated_us"].get<double>(), r.rows[i].simulated_ns / 1e3, 1e-3);
    EXPECT_NEAR(points[i]["error"].get<double>(), r.rows[i].error * 100, 0.01);
  }
  EXPECT_EQ(points[0]["configuration"], "bf16 m=16 n=4096 k=4096");
  EXPECT_EQ(points[5]["configuration"], "llama-3-8b tp1 prefill 1x512 [qkv_proj]");
  EXPECT_EQ(points[6]["configuration"], "all_reduce 8 GPUs 67108864 bytes nvswitch");
  EXPECT_EQ(spec["layer"][2]["encoding"]["x"]["scale"]["type"], "log");
  EXPECT_EQ(spec["layer"][2]["encoding"]["y"]["scale"]["type"], "log");
  EXPECT_EQ(spec["layer"][2]["encoding"]["color"]["field"], "category");
  // The band spans every point, at +-10% of y = x.
  const nlohmann::json& line = spec["layer"][0]["data"]["values"];
  for (const nlohmann::json& p : points) {
    for (const char* axis : {"measured_us", "simulated_us"}) {
      EXPECT_LE(line[0]["measured_us"].get<double>(), p[axis].get<double>());
      EXPECT_GE(line[1]["measured_us"].get<double>(), p[axis].get<double>());
    }
  }
  EXPECT_DOUBLE_EQ(line[1]["high"].get<double>(), 1.1 * line[1]["simulated_us"].get<double>());
  EXPECT_DOUBLE_EQ(line[1]["low"].get<double>(), 0.9 * line[1]["simulated_us"].get<double>());
}

TEST(ReportValidatePage, EachPointsConfigurationIsTheOneTheCsvGives) {
  const ValidationReport r = handmade_report();
  const nlohmann::json points = simulated_vs_measured_spec(r)["layer"][2]["data"]["values"];
  std::istringstream csv(to_csv(r));
  std::string line;
  std::getline(csv, line);  // the header
  for (const nlohmann::json& p : points) {
    ASSERT_TRUE(std::getline(csv, line));
    // source, gpu, category, configuration, ...
    const std::vector<std::string> fields = test::split_csv(line);
    ASSERT_GE(fields.size(), 4u) << line;
    EXPECT_EQ(p["source"], fields[0]);
    EXPECT_EQ(p["category"], fields[2]);
    EXPECT_EQ(p["configuration"], fields[3]);
  }
  EXPECT_FALSE(std::getline(csv, line));
}

TEST(ReportValidatePage, TheBarsAreEachCategorysMedianAndP90) {
  const ValidationReport r = handmade_report();
  const nlohmann::json bars = error_by_category_spec(r)["data"]["values"];
  // A user's rows are never fitted on: two bars per category.
  ASSERT_EQ(bars.size(), 2 * r.categories.size());
  for (std::size_t i = 0; i < r.categories.size(); ++i) {
    const CategoryStats& c = r.categories[i];
    EXPECT_EQ(bars[2 * i]["category"], c.category);
    EXPECT_EQ(bars[2 * i]["statistic"], "median |error|, not fitted on");
    EXPECT_NEAR(bars[2 * i]["percent"].get<double>(), c.median_abs_error * 100, 0.01);
    EXPECT_EQ(bars[2 * i + 1]["statistic"], "P90 |error|, not fitted on");
    EXPECT_NEAR(bars[2 * i + 1]["percent"].get<double>(), c.p90_abs_error * 100, 0.01);
  }
}

TEST(ReportValidatePage, ThePageHoldsTheTextReportsTables) {
  const ValidationReport r = handmade_report();
  const std::string html = format_html_report(r, "Measurements: hand-made.");
  EXPECT_THAT(html, HasSubstr("<p>Measurements: hand-made.</p>"));
  EXPECT_THAT(html, HasSubstr("7 rows compared, 0 skipped."));
  for (const CategoryStats& c : r.categories) {
    EXPECT_THAT(html, HasSubstr(fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td "
                                            "class=\"num\">{:.1f}%</td>",
                                            report::escape_html(c.category), c.rows,
                                            c.median_abs_error * 100)));
  }
  EXPECT_THAT(html, HasSubstr("<h2>By source and GPU</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Worst rows</h2>"));
  // The hostile source is text in the tables and escaped JSON in the data, never markup.
  EXPECT_THAT(html, HasSubstr(report::escape_html(test::kHostileSource)));
  EXPECT_THAT(html, Not(HasSubstr(test::kHostileSource)));
  EXPECT_EQ(test::plot_elements(html).size(), 2u);
}

TEST(ReportValidatePage, AReportThatCannotBeWrittenNamesThePath) {
  const std::string measured = std::string(TESSERA_SOURCE_DIR) + "/tests/cli/validate/measured.csv";
  const test::CliRun run = test::run_cli(
      {"tessera", "validate", "-q", measured.c_str(), "--report", "/nonexistent/dir/report.html"});
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("cannot write '/nonexistent/dir/report.html'"));
}

}  // namespace
}  // namespace tessera::validation
