#include "tessera/validation/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tessera/report/html_page.hpp"

namespace tessera::validation {

namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "https://vega.github.io/schema/vega-lite/v5.json";
constexpr std::string_view kNotFitted = "not fitted on";
constexpr std::string_view kFitted = "fitted on";

std::string percent(std::size_t rows, double value) {
  return rows == 0 ? "-" : fmt::format("{:.1f}%", value * 100);
}

std::string signed_percent(std::size_t rows, double value) {
  return rows == 0 ? "-" : fmt::format("{:+.1f}%", value * 100);
}

// Rounded so that the page stays small; the CSV has the full figures.
double round_to(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

// Vega's tableau20 with its ten dark colours first: the first ten categories differ in hue, not
// only in shade.
json category_colours() {
  return json::array({"#4c78a8", "#f58518", "#54a24b", "#b79a20", "#439894", "#e45756", "#79706e",
                      "#d67195", "#b279a2", "#9e765f", "#9ecae9", "#ffbf79", "#88d27a", "#f2cf5b",
                      "#83bcb6", "#ff9d98", "#bab0ac", "#fcbfd2", "#d6a5c9", "#d8b5a5"});
}

json axis(std::string_view field, std::string_view title) {
  return {
      {"field", field}, {"type", "quantitative"}, {"scale", {{"type", "log"}}}, {"title", title}};
}

report::Table category_table(const ValidationReport& r) {
  report::Table t{
      .caption =
          "Rows not fitted on (the calibration's split: docs/validate.md), and apart the "
          "rows it was fitted on",
      .header = {"category", "rows", "median |error|", "P90 |error|", "median error", "fitted rows",
                 "fitted: median |error|", "fitted: P90 |error|"},
      .rows = {},
      .numeric_columns = {1, 2, 3, 4, 5, 6, 7}};
  for (const CategoryStats& c : r.categories) {
    t.rows.push_back({c.category, std::to_string(c.rows), percent(c.rows, c.median_abs_error),
                      percent(c.rows, c.p90_abs_error), signed_percent(c.rows, c.median_error),
                      std::to_string(c.fitted_rows),
                      percent(c.fitted_rows, c.fitted_median_abs_error),
                      percent(c.fitted_rows, c.fitted_p90_abs_error)});
  }
  return t;
}

report::Table source_table(const ValidationReport& r) {
  report::Table t{.caption = "By source (rows not fitted on)",
                  .header = {"category", "source", "GPU", "rows", "median |error|", "P90 |error|",
                             "median error"},
                  .rows = {},
                  .numeric_columns = {3, 4, 5, 6}};
  for (const SourceStats& s : r.sources) {
    t.rows.push_back({s.category, s.source, s.gpu, std::to_string(s.rows),
                      percent(s.rows, s.median_abs_error), percent(s.rows, s.p90_abs_error),
                      signed_percent(s.rows, s.median_error)});
  }
  return t;
}

report::Table worst_table(const ValidationReport& r) {
  report::Table t{.caption = "Worst rows per category (not fitted on)",
                  .header = {"category", "error", "measured us", "simulated us", "GPU",
                             "configuration", "source"},
                  .rows = {},
                  .numeric_columns = {1, 2, 3}};
  for (const CategoryStats& c : r.categories) {
    for (std::size_t i : c.worst) {
      const RowResult& row = r.rows[i];
      t.rows.push_back({c.category, fmt::format("{:+.1f}%", row.error * 100),
                        fmt::format("{:.2f}", row.measurement.measured_ns / 1e3),
                        fmt::format("{:.2f}", row.simulated_ns / 1e3), row.measurement.gpu,
                        describe(row.measurement), row.measurement.source});
    }
  }
  return t;
}

report::Table skipped_table(const ValidationReport& r) {
  report::Table t{.caption = "Skipped",
                  .header = {"rows", "source", "reason"},
                  .rows = {},
                  .numeric_columns = {0}};
  for (const Skipped& s : r.skipped) t.rows.push_back({std::to_string(s.rows), s.source, s.reason});
  return t;
}

}  // namespace

json simulated_vs_measured_spec(const ValidationReport& r) {
  json points = json::array();
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  for (const RowResult& row : r.rows) {
    const double measured = row.measurement.measured_ns / 1e3;
    const double simulated = row.simulated_ns / 1e3;
    // A log axis has no place for zero.
    if (measured <= 0 || simulated <= 0) continue;
    lo = std::min({lo, measured, simulated});
    hi = std::max({hi, measured, simulated});
    points.push_back({{"measured_us", round_to(measured, 4)},
                      {"simulated_us", round_to(simulated, 4)},
                      {"error", round_to(row.error * 100, 2)},
                      {"category", row.category},
                      {"gpu", row.measurement.gpu},
                      {"configuration", describe(row.measurement)},
                      {"source", row.measurement.source},
                      {"fitted", row.fitted ? kFitted : kNotFitted}});
  }
  if (points.empty()) lo = hi = 1;
  // Two points suffice: on log axes y = x and y = (1 +- 0.1) x are straight lines.
  const json line = {
      {{"measured_us", lo}, {"simulated_us", lo}, {"low", lo * 0.9}, {"high", lo * 1.1}},
      {{"measured_us", hi}, {"simulated_us", hi}, {"low", hi * 0.9}, {"high", hi * 1.1}}};
  const json x = axis("measured_us", "measured (us)");
  const json y = axis("simulated_us", "simulated (us)");
  const json band = {
      {"data", {{"values", line}}},
      {"mark", {{"type", "area"}, {"color", "#999999"}, {"opacity", 0.25}}},
      {"encoding", {{"x", x}, {"y", axis("low", "simulated (us)")}, {"y2", {{"field", "high"}}}}}};
  const json identity = {{"data", {{"values", line}}},
                         {"mark", {{"type", "line"}, {"color", "#444444"}, {"strokeWidth", 1}}},
                         {"encoding", {{"x", x}, {"y", y}}}};
  const json tooltip = json::array({
      {{"field", "category"}, {"type", "nominal"}},
      {{"field", "gpu"}, {"type", "nominal"}, {"title", "GPU"}},
      {{"field", "configuration"}, {"type", "nominal"}},
      {{"field", "measured_us"}, {"type", "quantitative"}, {"title", "measured (us)"}},
      {{"field", "simulated_us"}, {"type", "quantitative"}, {"title", "simulated (us)"}},
      {{"field", "error"}, {"type", "quantitative"}, {"title", "error (%)"}},
      {{"field", "fitted"}, {"type", "nominal"}, {"title", "calibration"}},
      {{"field", "source"}, {"type", "nominal"}, {"title", "source (file:line)"}},
  });
  const json color = {{"field", "category"},
                      {"type", "nominal"},
                      {"scale", {{"range", category_colours()}}},
                      {"legend", {{"title", "category"}}}};
  const json shape = {{"field", "fitted"},
                      {"type", "nominal"},
                      {"scale",
                       {{"domain", json::array({kNotFitted, kFitted})},
                        {"range", json::array({"circle", "triangle"})}}},
                      {"legend", {{"title", "calibration"}}}};
  // Moved, not copied through an initializer list: the points are the page's bulk.
  const std::size_t count = points.size();
  json rows = {
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 18}, {"opacity", 0.7}}},
      {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"shape", shape}, {"tooltip", tooltip}}}};
  rows["data"]["values"] = std::move(points);
  json spec = {{"$schema", kSchema},
               {"title", fmt::format("Simulated against measured time: {} rows", count)},
               {"width", 900},
               {"height", 540},
               {"layer", json::array({band, identity})}};
  spec["layer"].push_back(std::move(rows));
  return spec;
}

json error_by_category_spec(const ValidationReport& r) {
  json bars = json::array();
  const auto add = [&](const CategoryStats& c, std::string_view split, std::size_t rows,
                       double median, double p90) {
    if (rows == 0) return;
    for (const auto& [statistic, value] : {std::pair{"median", median}, std::pair{"P90", p90}}) {
      bars.push_back({{"category", c.category},
                      {"statistic", fmt::format("{} |error|, {}", statistic, split)},
                      {"percent", round_to(value * 100, 2)},
                      {"rows", rows}});
    }
  };
  for (const CategoryStats& c : r.categories) {
    add(c, kNotFitted, c.rows, c.median_abs_error, c.p90_abs_error);
    add(c, kFitted, c.fitted_rows, c.fitted_median_abs_error, c.fitted_p90_abs_error);
  }
  const std::vector<std::string> statistics = {
      fmt::format("median |error|, {}", kNotFitted), fmt::format("P90 |error|, {}", kNotFitted),
      fmt::format("median |error|, {}", kFitted), fmt::format("P90 |error|, {}", kFitted)};
  return {
      {"$schema", kSchema},
      {"title", "|error| per category"},
      {"data", {{"values", bars}}},
      {"mark", {{"type", "bar"}}},
      {"width", {{"step", 14}}},  // per bar: a category takes four
      {"height", 360},
      {"encoding",
       {{"x",
         {{"field", "category"},
          {"type", "nominal"},
          {"sort", nullptr},
          {"axis", {{"labelAngle", -35}, {"labelLimit", 240}}}}},
        {"xOffset", {{"field", "statistic"}, {"sort", statistics}}},
        {"y", {{"field", "percent"}, {"type", "quantitative"}, {"title", "|error| (%)"}}},
        {"color",
         {{"field", "statistic"},
          {"type", "nominal"},
          {"scale",
           {{"domain", statistics},
            {"range", json::array({"#1f5fa8", "#8fb8e6", "#c2560f", "#f2b27d"})}}},
          {"legend", {{"title", nullptr}, {"orient", "top"}, {"columns", 2}}}}},
        {"tooltip",
         {{{"field", "category"}, {"type", "nominal"}},
          {{"field", "statistic"}, {"type", "nominal"}},
          {{"field", "percent"}, {"type", "quantitative"}, {"title", "|error| (%)"}},
          {{"field", "rows"}, {"type", "quantitative"}}}}}},
  };
}

std::string format_html_report(const ValidationReport& r, std::string_view inputs) {
  report::HtmlPage page("tessera validate: the simulated GPU against measurements");
  std::int64_t skipped = 0;
  for (const Skipped& s : r.skipped) skipped += s.rows;
  page.paragraph(inputs);
  page.paragraph(
      fmt::format("{} rows compared, {} skipped. Error is (simulated - measured) / "
                  "measured; docs/validate.md says how each row is rebuilt.",
                  r.rows.size(), skipped));
  if (!r.rows.empty()) {
    page.section("Simulated against measured")
        .paragraph(
            "One point per row, on log axes. The line is y = x; the band is +-10%. "
            "Triangles are rows the calibration was fitted on.")
        .vega_lite(simulated_vs_measured_spec(r));
    page.section("Error per category")
        .vega_lite(error_by_category_spec(r))
        .table(category_table(r));
  }
  if (!r.sources.empty()) page.section("By source and GPU").table(source_table(r));
  const report::Table worst = worst_table(r);
  if (!worst.rows.empty()) page.section("Worst rows").table(worst);
  if (!r.skipped.empty()) {
    page.section("Skipped")
        .paragraph("Rows read but not compared, with the reason.")
        .table(skipped_table(r));
  }
  return page.render();
}

}  // namespace tessera::validation
