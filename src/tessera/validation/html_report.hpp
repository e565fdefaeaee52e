#pragma once
// `tessera validate --report`: the report as one HTML page that opens offline. It holds the text
// report's tables and two Vega-Lite plots: each row's simulated against its measured time
// (log-log, coloured by category, with y = x and a +-10% band), and per category the median and
// P90 of |error|.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tessera/validation/report.hpp"

namespace tessera::validation {

// One point per row: measured_us, simulated_us, error, category, gpu, configuration, source,
// fitted; layered over the y = x line and the +-10% band.
nlohmann::json simulated_vs_measured_spec(const ValidationReport& report);
// Per category, median and P90 |error| (percent) of the rows not fitted on and of those fitted on.
nlohmann::json error_by_category_spec(const ValidationReport& report);

// The page. `inputs` says what was compared with what (the files, the model's options), shown
// under the title.
std::string format_html_report(const ValidationReport& report, std::string_view inputs);

}  // namespace tessera::validation
