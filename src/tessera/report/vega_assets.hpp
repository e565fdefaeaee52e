#pragma once
// vega, vega-lite and vega-embed, compiled in from third_party/js (the generated
// vega_scripts.cpp), so that a page inlines them and draws its plots without a network.

#include <span>
#include <string>
#include <string_view>

namespace tessera::report {

// One minified script, held as chunks (each under a compiler's limit on a string literal).
struct InlineScript {
  std::string_view package;  // the npm package: "vega", "vega-lite", "vega-embed"
  std::string_view version;
  std::span<const std::string_view> chunks;
};

// In the order a page loads them: vega-lite needs vega, vega-embed both.
std::span<const InlineScript> vega_scripts();

// The chunks joined.
std::string script_text(const InlineScript& script);

}  // namespace tessera::report
