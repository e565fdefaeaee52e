#include "tessera/report/html_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "tessera/report/vega_assets.hpp"

namespace tessera::report {

namespace {

constexpr std::string_view kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1.5em; max-width: 1200px;
  color: #222; }
h1 { font-size: 1.6em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #e4e4e4; text-align: left; white-space: nowrap; }
.table { overflow-x: auto; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.plot { margin: 1em 0; }
.plot-error { color: #b00; white-space: pre-wrap; }
)";

// Draws every plot as SVG, whose marks are elements of the page (a canvas's pixels are not), with
// a menu to save it as SVG or PNG. A failure is shown in the plot's place and logged as an error,
// which a headless browser's log shows.
constexpr std::string_view kEmbed = R"(
const options = {
  renderer: 'svg',
  actions: {export: true, source: false, compiled: false, editor: false},
};
for (const data of document.querySelectorAll('script[data-plot]')) {
  const target = document.getElementById(data.dataset.plot);
  vegaEmbed(target, JSON.parse(data.textContent), options)
    .catch((error) => {
      target.classList.add('plot-error');
      target.textContent = 'This plot could not be drawn: ' + error;
      console.error('ERROR: plot ' + data.dataset.plot + ': ' + error);
    });
}
)";

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_table(const Table& table) {
  const auto numeric = [&](std::size_t column) {
    return std::ranges::find(table.numeric_columns, column) != table.numeric_columns.end();
  };
  // Cells do not wrap; a wide table scrolls on its own.
  std::string out = "<div class=\"table\"><table>\n";
  if (!table.caption.empty())
    out += fmt::format("<caption>{}</caption>\n", escape_html(table.caption));
  out += "<thead><tr>";
  for (const std::string& h : table.header) out += fmt::format("<th>{}</th>", escape_html(h));
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      out += fmt::format("<td{}>{}</td>", numeric(i) ? " class=\"num\"" : "", escape_html(row[i]));
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table></div>\n";
}

std::string script_json(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Outside strings JSON has no '<', so both sequences can only be inside one, where these
  // escapes mean the same characters.
  replace_all(text, "<!--", "\\u003c!--");
  replace_all(text, "</", "<\\/");
  return text;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

HtmlPage& HtmlPage::section(std::string_view heading) {
  if (in_section_) body_ += "</section>\n";
  body_ += fmt::format("<section>\n<h2>{}</h2>\n", escape_html(heading));
  in_section_ = true;
  return *this;
}

HtmlPage& HtmlPage::paragraph(std::string_view text) {
  body_ += fmt::format("<p>{}</p>\n", escape_html(text));
  return *this;
}

HtmlPage& HtmlPage::table(const Table& table) {
  body_ += render_table(table);
  return *this;
}

HtmlPage& HtmlPage::vega_lite(const nlohmann::json& spec) {
  const std::string id = fmt::format("plot-{}", plots_++);
  body_ += fmt::format(
      "<div class=\"plot\" id=\"{0}\"></div>\n"
      "<script type=\"application/json\" data-plot=\"{0}\">{1}</script>\n",
      id, script_json(spec));
  return *this;
}

std::string HtmlPage::render() const {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0}</title>\n<style>{1}</style>\n",
      escape_html(title_), kStyle);
  // A page without plots stays small: the scripts are about 800 KB.
  std::vector<std::string> versions;
  for (const InlineScript& script : plots_ > 0 ? vega_scripts() : std::span<const InlineScript>{}) {
    versions.push_back(fmt::format("{} {}", script.package, script.version));
    out += fmt::format("<script>/* {} {} */\n{}\n</script>\n", script.package, script.version,
                       script_text(script));
  }
  out += fmt::format("</head>\n<body>\n<h1>{}</h1>\n", escape_html(title_));
  out += body_;
  if (in_section_) out += "</section>\n";
  if (plots_ > 0) {
    out += fmt::format(
        "<noscript><p>The plots need JavaScript.</p></noscript>\n"
        "<footer><p>Plots drawn with {} (inlined: the page needs no network).</p></footer>\n"
        "<script>{}</script>\n",
        escape_html(fmt::format("{}", fmt::join(versions, ", "))), kEmbed);
  }
  return out + "</body>\n</html>\n";
}

}  // namespace tessera::report
