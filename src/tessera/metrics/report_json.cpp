// RunReport as JSON. Keys carry their units (ttft_ms, energy_j); nlohmann::json keeps object keys
// sorted, so the order is stable, and doubles are rounded to 6 significant digits so that golden
// files do not churn on the last bits of a floating-point sum.

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "tessera/metrics/report.hpp"

namespace tessera::metrics {

double round6(double x) {
  if (!std::isfinite(x) || x == 0) return 0.0;
  const std::string text = fmt::format("{:.6g}", x);
  return std::strtod(text.c_str(), nullptr);
}

namespace {

using nlohmann::json;

// An SLO target of 0 means "not set"; JSON says so with null rather than a misleading 0 ms.
json target_ms(core::Nanos target) {
  return target > 0 ? json(round6(core::to_millis(target))) : json(nullptr);
}

json percentiles_json(const Percentiles& p) {
  return {{"count", p.count},     {"mean", round6(p.mean)}, {"p50", round6(p.p50)},
          {"p90", round6(p.p90)}, {"p99", round6(p.p99)},   {"max", round6(p.max)}};
}

json inference_json(const InferenceSummary& s) {
  return {{"arrived", s.arrived},
          {"completed", s.completed},
          {"ttft_ms", percentiles_json(s.ttft_ms)},
          {"tpot_ms", percentiles_json(s.tpot_ms)},
          {"e2e_ms", percentiles_json(s.e2e_ms)},
          {"slo_attainment", round6(s.slo_attainment)},
          {"output_tokens_per_s", round6(s.output_tokens_per_s)}};
}

json training_json(const TrainingSummary& s) {
  return {{"iterations", s.iterations},
          {"iterations_per_s", round6(s.iterations_per_s)},
          {"samples_per_s", round6(s.samples_per_s)},
          {"iteration_ms", percentiles_json(s.iteration_ms)}};
}

json memory_json(const MemoryReport& m) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  return {{"budget_gib", round6(m.budget / kGiB)},
          {"weights_gib", round6(m.weights / kGiB)},
          {"activations_gib", round6(m.activations / kGiB)},
          {"kv_cache_gib", round6(m.kv_cache / kGiB)},
          {"kv_blocks", m.kv_blocks},
          {"block_size", m.block_size},
          {"peak_used_blocks", m.peak_used_blocks},
          {"preemptions", m.preemptions},
          {"rejected", m.rejected}};
}

json tenant_json(const TenantReport& t) {
  json j = {{"name", t.name},
            {"kind", t.kind},
            {"model", t.model},
            {"slo", {{"ttft_ms", target_ms(t.slo.ttft)}, {"tpot_ms", target_ms(t.slo.tpot)}}}};
  if (t.inference) j["inference"] = inference_json(*t.inference);
  if (t.training) j["training"] = training_json(*t.training);
  if (t.memory) j["memory"] = memory_json(*t.memory);
  if (t.out_of_memory) j["out_of_memory"] = *t.out_of_memory;
  return j;
}

json device_json(const device::DeviceStats& d) {
  return {{"elapsed_s", round6(core::to_seconds(d.elapsed))},
          {"sm_utilization_pct", round6(100.0 * d.sm_busy_fraction)},
          {"energy_j", round6(d.energy_joules)},
          {"average_power_w", round6(d.average_power_watts)},
          {"kernels_completed", d.kernels_completed}};
}

json mode_json(const ModeReport& m) {
  json tenants = json::array();
  for (const TenantReport& t : m.tenants) tenants.push_back(tenant_json(t));
  json j = {{"mode", m.mode},
            {"simulated_s", round6(core::to_seconds(m.simulated))},
            {"gpus", m.gpus},
            {"device", device_json(m.device)},
            {"tenants", std::move(tenants)}};
  if (!m.counters.empty()) {
    json counters = json::object();
    for (const auto& [name, value] : m.counters) counters[name] = round6(value);
    j["counters"] = std::move(counters);
  }
  return j;
}

}  // namespace

json to_json(const RunReport& report) {
  json modes = json::array();
  for (const ModeReport& m : report.modes) modes.push_back(mode_json(m));
  return {{"scenario", report.scenario},
          {"backend", report.backend},
          {"gpu", report.gpu},
          {"seed", report.seed},
          {"modes", std::move(modes)}};
}

}  // namespace tessera::metrics
