#include "tessera/experiment/html_report.hpp"

#include <fmt/format.h>

#include "tessera/report/html_page.hpp"
#include "tessera/scenario/html_report.hpp"

namespace tessera::experiment {
namespace {

// Rows whose first row is the header; every column after the first holds figures.
report::Table table_of(std::string caption, const std::vector<std::vector<std::string>>& rows) {
  report::Table t{.caption = std::move(caption), .header = {}, .rows = {}, .numeric_columns = {}};
  if (rows.empty()) return t;
  t.header = rows.front();
  t.rows.assign(rows.begin() + 1, rows.end());
  for (std::size_t i = 1; i < t.header.size(); ++i) t.numeric_columns.push_back(i);
  return t;
}

report::Table claims_table(const std::vector<ClaimResult>& claims) {
  const auto rows = claim_rows(claims);
  report::Table t{.caption = "The paper's claims, computed from this run",
                  .header = {rows.front().begin(), rows.front().end()},
                  .rows = {},
                  .numeric_columns = {1}};
  for (std::size_t i = 1; i < rows.size(); ++i) t.rows.emplace_back(rows[i].begin(), rows[i].end());
  return t;
}

// Every row at (x, y), the rows of one policy joined in order of x, each point labelled (a sweep's
// points by their setting). Exclusive is left out: it runs each tenant on a GPU of its own.
nlohmann::json frontier_spec(const Experiment& e, const ConfigResult& c) {
  using nlohmann::json;
  const FrontierPlot& f = *e.frontier;
  json values = json::array();
  for (const auto& m : c.report.modes) {
    const auto x = metric_value(c.report, f.x, m.mode);
    const auto y = metric_value(c.report, f.y, m.mode);
    if (!x || !y || m.mode == "exclusive") continue;
    const auto space = m.mode.find(' ');
    values.push_back({{"row", m.mode},
                      {"policy", m.mode.substr(0, space)},
                      {"point", space == std::string::npos ? m.mode : m.mode.substr(space + 1)},
                      {"x", *x},
                      {"y", *y}});
  }
  const json x = {{"field", "x"}, {"type", "quantitative"}, {"title", label(f.x)}};
  const json y = {{"field", "y"},
                  {"type", "quantitative"},
                  {"title", label(f.y)},
                  {"scale", {{"zero", false}}}};
  const json colour = {{"field", "policy"}, {"type", "nominal"}, {"title", "policy"}};
  return {
      {"$schema", "https://vega.github.io/schema/vega-lite/v5.json"},
      {"title", fmt::format("{} against {}", label(f.y), label(f.x))},
      {"data", {{"values", std::move(values)}}},
      {"width", 520},
      {"height", 320},
      {"layer",
       json::array({{{"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
                     {"encoding", {{"x", x}, {"y", y}, {"color", colour}, {"order", x}}}},
                    {{"mark", {{"type", "point"}, {"filled", true}, {"size", 60}}},
                     {"encoding",
                      {{"x", x},
                       {"y", y},
                       {"color", colour},
                       {"tooltip", json::array({{{"field", "row"}, {"type", "nominal"}}, x, y})}}}},
                    {{"mark", {{"type", "text"}, {"align", "left"}, {"dx", 6}, {"dy", -6}}},
                     {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "point"}}}}}}})}};
}

}  // namespace

std::string format_html_report(const ExperimentResult& result) {
  const Experiment& e = *result.experiment;
  report::HtmlPage page(fmt::format("tessera experiment: {}", e.name));
  page.paragraph(fmt::format("{}, {}.", e.paper, e.figure)).paragraph(e.setup);
  const bool several = result.configs.size() > 1;
  for (const ConfigResult& c : result.configs) {
    const scenario::Scenario& s = c.scenario;
    const std::string name = c.config->label.empty() ? s.name : c.config->label;
    const std::string prefix = several ? name + ": " : "";
    page.section(fmt::format("{}{}", prefix, "Setup"))
        .paragraph(fmt::format("{} ({}) on {} ({}), {:g} s simulated, seed {}.", s.name,
                               c.config->shown(), c.report.gpu, c.report.backend,
                               core::to_seconds(s.duration), s.seed));
    if (!c.claims.empty()) page.table(claims_table(c.claims));
    page.table(table_of("The experiment's figures per mode", result_rows(e, c.report)))
        .paragraph(source_line(e, s));
    if (e.frontier) page.section(fmt::format("{}Frontier", prefix)).vega_lite(frontier_spec(e, c));
    scenario::add_run_sections(page, c.report, prefix);
  }
  return page.render();
}

}  // namespace tessera::experiment
