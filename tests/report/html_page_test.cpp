#include "tessera/report/html_page.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "headless_chromium.hpp"
#include "tessera/report/vega_assets.hpp"

namespace tessera::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// What a spec's <script> element holds, read back as the page's JavaScript reads it.
nlohmann::json plot_data(const std::string& page, int plot) {
  const std::string open = fmt::format("data-plot=\"plot-{}\">", plot);
  const std::size_t start = page.find(open);
  if (start == std::string::npos) return nullptr;
  const std::size_t end = page.find("</script>", start);
  return nlohmann::json::parse(page.substr(start + open.size(), end - start - open.size()));
}

TEST(ReportHtmlPage, EscapesTextForElementsAndAttributes) {
  EXPECT_EQ(escape_html("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(escape_html("GEMM, M <= 64"), "GEMM, M &lt;= 64");
  EXPECT_EQ(escape_html(""), "");
}

TEST(ReportHtmlPage, ScriptJsonCannotEndItsElementAndReadsBackUnchanged) {
  const nlohmann::json value = {{"source", "a</script><script>alert(1)</script>.csv:2"},
                                {"comment", "<!-- <script>"},
                                {"upper", "</SCRIPT>"},
                                {"plain", "m <= 64"}};
  const std::string text = script_json(value);
  EXPECT_THAT(text, Not(HasSubstr("</")));
  EXPECT_THAT(text, Not(HasSubstr("<!--")));
  EXPECT_THAT(text, HasSubstr("<\\/script>"));
  EXPECT_EQ(nlohmann::json::parse(text), value);
}

TEST(ReportHtmlPage, ScriptJsonReplacesInvalidUtf8InsteadOfThrowing) {
  const nlohmann::json value = {{"source", std::string("bad\xff.csv")}};
  std::string text;
  EXPECT_NO_THROW(text = script_json(value));
  EXPECT_EQ(nlohmann::json::parse(text)["source"], "bad\xEF\xBF\xBD.csv");
}

TEST(ReportHtmlPage, TableHasItsHeaderRowsAndEscapedCells) {
  const Table t{.caption = "errors <per> category",
                .header = {"category", "rows"},
                .rows = {{"GEMM, M <= 64", "16"}, {"x</td><td>y", "3"}},
                .numeric_columns = {1}};
  const std::string html = render_table(t);
  EXPECT_THAT(html, HasSubstr("<caption>errors &lt;per&gt; category</caption>"));
  EXPECT_THAT(html, HasSubstr("<thead><tr><th>category</th><th>rows</th></tr></thead>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>GEMM, M &lt;= 64</td><td class=\"num\">16</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<td>x&lt;/td&gt;&lt;td&gt;y</td>"));
  EXPECT_EQ(test::count(html, "<tr>"), 3u);
  EXPECT_EQ(test::count(html, "<td"), 4u);
}

TEST(ReportHtmlPage, APageHoldsItsSectionsSpecsAndTheInlinedScripts) {
  const nlohmann::json spec = {{"data", {{"values", {{{"x", 1}, {"label", "</script>"}}}}}},
                               {"mark", "point"},
                               {"encoding", {{"x", {{"field", "x"}, {"type", "quantitative"}}}}}};
  HtmlPage page("validate <all>");
  page.section("Plots").paragraph("one & two").vega_lite(spec).vega_lite(spec);
  page.section("Tables").table(
      {.caption = "", .header = {"a"}, .rows = {{"1"}}, .numeric_columns = {}});
  EXPECT_EQ(page.plots(), 2u);
  const std::string html = page.render();
  EXPECT_THAT(html, HasSubstr("<title>validate &lt;all&gt;</title>"));
  EXPECT_THAT(html, HasSubstr("<h1>validate &lt;all&gt;</h1>"));
  EXPECT_THAT(html, HasSubstr("<section>\n<h2>Plots</h2>\n<p>one &amp; two</p>"));
  EXPECT_EQ(test::count(html, "<section>"), 2u);
  EXPECT_EQ(test::count(html, "</section>"), 2u);
  EXPECT_THAT(html, HasSubstr("<div class=\"plot\" id=\"plot-0\"></div>"));
  EXPECT_THAT(html, HasSubstr("<div class=\"plot\" id=\"plot-1\"></div>"));
  EXPECT_EQ(plot_data(html, 0), spec);
  EXPECT_EQ(plot_data(html, 1), spec);
  EXPECT_THAT(html, HasSubstr("renderer: 'svg',"));
  for (const InlineScript& script : vega_scripts()) {
    EXPECT_THAT(html, HasSubstr(script_text(script))) << script.package;
    EXPECT_THAT(html, HasSubstr(fmt::format("{} {}", script.package, script.version)));
  }
  // Each <script> ends where it was meant to: the escaped label adds no closing tag.
  EXPECT_EQ(test::count(html, "<script"), test::count(html, "</script>"));
  EXPECT_EQ(test::count(html, "<script"), vega_scripts().size() + 2 + 1);
}

TEST(ReportHtmlPage, APageWithoutPlotsCarriesNoScripts) {
  HtmlPage page("tables only");
  page.section("A").table({.caption = "", .header = {"a"}, .rows = {}, .numeric_columns = {}});
  const std::string html = page.render();
  EXPECT_EQ(page.plots(), 0u);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_LT(html.size(), 4096u);
}

}  // namespace
}  // namespace tessera::report
