#pragma once
// One HTML page that opens offline: a title, sections of paragraphs, tables and Vega-Lite plots.
// vega, vega-lite and vega-embed are inlined (vega_assets.hpp) and draw each plot as SVG, so the
// page's DOM holds the rendered marks.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::report {

// Cells are plain text, escaped when the page is rendered.
struct Table {
  std::string caption;  // none when empty
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> numeric_columns;  // right-aligned
};

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  // Starts a section; what follows goes in it until the next.
  HtmlPage& section(std::string_view heading);
  HtmlPage& paragraph(std::string_view text);
  HtmlPage& table(const Table& table);
  // A Vega-Lite spec (a JSON object) with its data inline, drawn into its own element.
  HtmlPage& vega_lite(const nlohmann::json& spec);

  std::size_t plots() const { return plots_; }
  std::string render() const;

 private:
  std::string title_;
  std::string body_;
  std::size_t plots_ = 0;
  bool in_section_ = false;
};

// Text for an element's content or an attribute's value: & < > " ' as entities.
std::string escape_html(std::string_view text);
// A table as <table>, its cells escaped.
std::string render_table(const Table& table);
// JSON for inside a <script> element: "</" and "<!--" (which would end the element or change how
// the parser reads it) are written as "<\/" and "\u003c!--", which JSON reads back unchanged.
// Invalid UTF-8 is replaced, not thrown on.
std::string script_json(const nlohmann::json& value);

}  // namespace tessera::report
