#pragma once
// `tessera simulate --report` and `tessera demo --report`: a run's report as one HTML page that
// opens offline. It holds the terminal's table, and Vega-Lite plots: per inference tenant the CDF
// of TTFT and of TPOT per mode, throughput and SLO attainment per mode, and where KV caches were
// sized, each tenant's memory against its budget. A tenant out of memory in a mode is in the
// table and absent from that mode's plots.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/metrics/report.hpp"
#include "tessera/report/html_page.hpp"

namespace tessera::scenario {

// A point of an empirical CDF: `fraction` of the samples are at or below `value`.
struct CdfPoint {
  double value = 0;
  double fraction = 0;
};

// Enough points for a smooth line, few enough that a long run's page stays small.
inline constexpr std::size_t kMaxCdfPoints = 500;

// The CDF of `samples` at no more than `max_points` (at least 2) points: every sample when there
// are that few, otherwise the exact quantiles at evenly spaced ranks, the first and last included.
std::vector<CdfPoint> thin_cdf(std::vector<double> samples, std::size_t max_points = kMaxCdfPoints);

enum class Latency { kTtft, kTpot };

// One line per mode in which `tenant` ran with samples kept: {mode, ms, fraction} points, x on a
// log scale (samples of 0 ms, such as single-token outputs' TPOT, lie off it but count in the
// fractions), and the tenant's target as a vertical rule when set. Null when no mode has a point.
nlohmann::json latency_cdf_spec(const metrics::RunReport& report, std::string_view tenant,
                                Latency latency);
// Per tenant, a bar per mode: output tokens/s of inference tenants, samples/s of training ones.
nlohmann::json throughput_spec(const metrics::RunReport& report);
// Attainment (%) per mode of each inference tenant with a target; null when none has one.
nlohmann::json slo_attainment_spec(const metrics::RunReport& report);
// Per mode and tenant with a MemoryReport, weights, activations and KV cache (GiB) stacked, with
// ticks at the budget and at the peak KV use; null when no tenant has one.
nlohmann::json memory_spec(const metrics::RunReport& report);

// The run's sections (tables, then the plots above that apply) added to `page`, each heading
// after `prefix` (a page of several runs tells them apart by it).
void add_run_sections(report::HtmlPage& page, const metrics::RunReport& report,
                      std::string_view prefix);
// The page.
std::string format_html_report(const metrics::RunReport& report);

}  // namespace tessera::scenario
