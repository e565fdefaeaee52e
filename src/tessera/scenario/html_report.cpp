#include "tessera/scenario/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "tessera/core/time.hpp"
#include "tessera/report/html_page.hpp"

namespace tessera::scenario {

namespace {

using metrics::ModeReport;
using metrics::RunReport;
using metrics::TenantReport;
using nlohmann::json;

constexpr std::string_view kSchema = "https://vega.github.io/schema/vega-lite/v5.json";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::string_view kNone = "-";

using metrics::round6;

std::string pair(const metrics::Percentiles& p) {
  if (p.count == 0) return std::string(kNone);
  return fmt::format("{}/{}", metrics::format_number(p.p50), metrics::format_number(p.p99));
}

bool has_slo(const TenantReport& t) {
  return t.slo.ttft > 0 || t.slo.tpot > 0;
}

const TenantReport* find_tenant(const ModeReport& m, std::string_view name) {
  const auto it = std::ranges::find(m.tenants, name, &TenantReport::name);
  return it == m.tenants.end() ? nullptr : &*it;
}

// Tenants by name in the order they first appear, and one that stands for each (for its kind,
// SLO), preferring a mode in which it ran.
std::vector<const TenantReport*> tenants(const RunReport& r) {
  std::vector<const TenantReport*> out;
  for (const ModeReport& m : r.modes) {
    for (const TenantReport& t : m.tenants) {
      auto it = std::ranges::find(out, t.name, &TenantReport::name);
      if (it == out.end()) {
        out.push_back(&t);
      } else if ((*it)->out_of_memory && !t.out_of_memory) {
        *it = &t;
      }
    }
  }
  return out;
}

// Each mode keeps its colour in every plot.
json mode_colour(const RunReport& r) {
  json domain = json::array();
  for (const ModeReport& m : r.modes) domain.push_back(m.mode);
  return {{"field", "mode"},
          {"type", "nominal"},
          {"scale",
           {{"domain", domain},
            {"range", json::array({"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b79a20",
                                   "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"})}}},
          {"legend", {{"title", "mode"}}}};
}

json mode_axis() {
  return {{"field", "mode"}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}};
}

// One small bar chart per tenant, side by side: each has its own unit and scale.
json per_tenant_bars(std::string_view title, json charts) {
  return {{"$schema", kSchema},
          {"title", title},
          {"hconcat", std::move(charts)},
          {"resolve", {{"scale", {{"y", "independent"}}}}}};
}

json bar_chart(const RunReport& r, std::string_view title, json values, std::string_view unit,
               std::optional<double> max) {
  json y = {{"field", "value"}, {"type", "quantitative"}, {"title", unit}};
  if (max) y["scale"] = {{"domain", json::array({0, *max})}};
  return {{"title", title},
          {"data", {{"values", std::move(values)}}},
          {"mark", {{"type", "bar"}}},
          {"width", {{"step", 26}}},
          {"height", 220},
          {"encoding",
           {{"x", mode_axis()},
            {"y", y},
            {"color", mode_colour(r)},
            {"tooltip",
             {{{"field", "mode"}, {"type", "nominal"}},
              {{"field", "value"}, {"type", "quantitative"}, {"title", unit}}}}}}};
}

report::Table results_table(const RunReport& r) {
  report::Table t{.caption = "Per mode and tenant",
                  .header = {"mode", "tenant", "kind", "done/arr", "TTFT p50/p99", "TPOT p50/p99",
                             "E2E p99", "SLO %", "throughput"},
                  .rows = {},
                  .numeric_columns = {3, 4, 5, 6, 7}};
  for (const ModeReport& m : r.modes) {
    for (const TenantReport& tenant : m.tenants) {
      std::vector<std::string> row = {m.mode, tenant.name, tenant.kind};
      row.resize(t.header.size(), std::string(kNone));
      if (tenant.inference) {
        const metrics::InferenceSummary& s = *tenant.inference;
        row[3] = fmt::format("{}/{}", s.completed, s.arrived);
        row[4] = pair(s.ttft_ms);
        row[5] = pair(s.tpot_ms);
        if (s.e2e_ms.count > 0) row[6] = metrics::format_number(s.e2e_ms.p99);
        if (has_slo(tenant)) row[7] = fmt::format("{:.1f}", 100 * s.slo_attainment);
        row[8] = fmt::format("{} tok/s", metrics::format_number(s.output_tokens_per_s));
      } else if (tenant.out_of_memory) {
        row[8] = "out of memory";
      } else if (tenant.training) {
        row[8] = fmt::format("{} it/s {} smp/s",
                             metrics::format_number(tenant.training->iterations_per_s),
                             metrics::format_number(tenant.training->samples_per_s));
      }
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

report::Table device_table(const RunReport& r) {
  const bool simulated = r.backend == "simulator";
  report::Table t{
      .caption = "Device per mode (energy summed and utilization averaged over its GPUs)",
      .header = {"mode", "SM util", "energy J", "avg power W", "GPUs",
                 simulated ? "simulated s" : "run s"},
      .rows = {},
      .numeric_columns = {1, 2, 3, 4, 5}};
  for (const ModeReport& m : r.modes) {
    t.rows.push_back({m.mode, fmt::format("{:.1f}%", 100 * m.device.sm_busy_fraction),
                      metrics::format_number(m.device.energy_joules),
                      metrics::format_number(m.device.average_power_watts), std::to_string(m.gpus),
                      metrics::format_number(core::to_seconds(m.simulated))});
  }
  return t;
}

double peak_fraction(const metrics::MemoryReport& m) {
  return m.kv_blocks > 0 ? static_cast<double>(m.peak_used_blocks) / m.kv_blocks : 0;
}

report::Table memory_table(const RunReport& r) {
  report::Table t{.caption = "Memory of the tenants whose KV cache was sized (GiB)",
                  .header = {"mode", "tenant", "weights", "activations", "KV cache", "budget",
                             "KV blocks", "block size", "peak KV", "preempted", "dropped"},
                  .rows = {},
                  .numeric_columns = {2, 3, 4, 5, 6, 7, 8, 9, 10}};
  for (const ModeReport& m : r.modes) {
    for (const TenantReport& tenant : m.tenants) {
      if (!tenant.memory) continue;
      const metrics::MemoryReport& mr = *tenant.memory;
      t.rows.push_back({m.mode, tenant.name, metrics::format_number(mr.weights / kGiB),
                        metrics::format_number(mr.activations / kGiB),
                        metrics::format_number(mr.kv_cache / kGiB),
                        metrics::format_number(mr.budget / kGiB), std::to_string(mr.kv_blocks),
                        std::to_string(mr.block_size),
                        fmt::format("{:.0f}%", 100 * peak_fraction(mr)),
                        std::to_string(mr.preemptions), std::to_string(mr.rejected)});
    }
  }
  return t;
}

report::Table out_of_memory_table(const RunReport& r) {
  report::Table t{.caption = "Out of memory: not run in that mode, and absent from its plots",
                  .header = {"mode", "tenant", "why"},
                  .rows = {},
                  .numeric_columns = {}};
  for (const ModeReport& m : r.modes) {
    for (const TenantReport& tenant : m.tenants) {
      if (tenant.out_of_memory) t.rows.push_back({m.mode, tenant.name, *tenant.out_of_memory});
    }
  }
  return t;
}

}  // namespace

std::vector<CdfPoint> thin_cdf(std::vector<double> samples, std::size_t max_points) {
  std::ranges::sort(samples);
  const std::size_t n = samples.size();
  const std::size_t points = std::min(n, std::max<std::size_t>(max_points, 2));
  std::vector<CdfPoint> out;
  out.reserve(points);
  for (std::size_t k = 0; k < points; ++k) {
    // Evenly spaced ranks from the first to the last, rounded to the nearest.
    const std::size_t i = points == 1 ? 0 : (k * (n - 1) * 2 + (points - 1)) / ((points - 1) * 2);
    // Of equal samples, the CDF's step is at the last one.
    std::size_t last = i;
    while (last + 1 < n && samples[last + 1] == samples[i]) ++last;
    const double fraction = static_cast<double>(last + 1) / static_cast<double>(n);
    if (!out.empty() && out.back().value == samples[i]) continue;
    out.push_back({samples[i], fraction});
  }
  return out;
}

json latency_cdf_spec(const RunReport& r, std::string_view tenant, Latency latency) {
  const bool ttft = latency == Latency::kTtft;
  const std::string_view name = ttft ? "TTFT" : "TPOT";
  json points = json::array();
  core::Nanos target = 0;
  for (const ModeReport& m : r.modes) {
    const TenantReport* t = find_tenant(m, tenant);
    if (t == nullptr || t->out_of_memory || !t->samples) continue;
    target = ttft ? t->slo.ttft : t->slo.tpot;
    for (const CdfPoint& p : thin_cdf(ttft ? t->samples->ttft_ms : t->samples->tpot_ms)) {
      if (p.value <= 0) continue;  // a log axis has no place for zero
      points.push_back({{"mode", m.mode}, {"ms", p.value}, {"fraction", p.fraction}});
    }
  }
  if (points.empty()) return nullptr;
  const std::string axis_title = fmt::format("{} (ms)", name);
  json line = {{"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"strokeWidth", 1.5}}},
               {"encoding",
                {{"x",
                  {{"field", "ms"},
                   {"type", "quantitative"},
                   {"scale", {{"type", "log"}}},
                   {"title", axis_title}}},
                 {"y",
                  {{"field", "fraction"},
                   {"type", "quantitative"},
                   {"scale", {{"domain", json::array({0, 1})}}},
                   {"title", "fraction of requests"}}},
                 {"color", mode_colour(r)},
                 {"tooltip",
                  {{{"field", "mode"}, {"type", "nominal"}},
                   {{"field", "ms"}, {"type", "quantitative"}, {"title", axis_title}},
                   {{"field", "fraction"}, {"type", "quantitative"}, {"format", ".3f"}}}}}}};
  line["data"]["values"] = std::move(points);
  json spec = {
      {"$schema", kSchema},
      {"title", target > 0 ? fmt::format("{}: {} CDF (dashed: its target, {} ms)", tenant, name,
                                         metrics::format_number(core::to_millis(target)))
                           : fmt::format("{}: {} CDF", tenant, name)},
      {"width", 520},
      {"height", 280},
      {"layer", json::array()}};
  spec["layer"].push_back(std::move(line));
  if (target > 0) {
    spec["layer"].push_back(
        {{"data", {{"values", json::array({json{{"target_ms", core::to_millis(target)}}})}}},
         {"mark", {{"type", "rule"}, {"color", "#b00000"}, {"strokeDash", json::array({5, 3})}}},
         {"encoding", {{"x", {{"field", "target_ms"}, {"type", "quantitative"}}}}}});
  }
  return spec;
}

json throughput_spec(const RunReport& r) {
  json charts = json::array();
  for (const TenantReport* representative : tenants(r)) {
    const bool inference = representative->kind == "inference";
    json values = json::array();
    for (const ModeReport& m : r.modes) {
      const TenantReport* t = find_tenant(m, representative->name);
      if (t == nullptr || t->out_of_memory) continue;
      if (t->inference) {
        values.push_back({{"mode", m.mode}, {"value", round6(t->inference->output_tokens_per_s)}});
      } else if (t->training) {
        values.push_back({{"mode", m.mode}, {"value", round6(t->training->samples_per_s)}});
      }
    }
    if (values.empty()) continue;
    charts.push_back(bar_chart(r, representative->name, std::move(values),
                               inference ? "output tokens/s" : "samples/s", std::nullopt));
  }
  return per_tenant_bars("Throughput per mode", std::move(charts));
}

json slo_attainment_spec(const RunReport& r) {
  json charts = json::array();
  for (const TenantReport* representative : tenants(r)) {
    if (representative->kind != "inference" || !has_slo(*representative)) continue;
    json values = json::array();
    for (const ModeReport& m : r.modes) {
      const TenantReport* t = find_tenant(m, representative->name);
      if (t == nullptr || !t->inference) continue;
      values.push_back({{"mode", m.mode}, {"value", round6(100 * t->inference->slo_attainment)}});
    }
    if (values.empty()) continue;
    charts.push_back(
        bar_chart(r, representative->name, std::move(values), "SLO attainment (%)", 100.0));
  }
  if (charts.empty()) return nullptr;
  return per_tenant_bars("Requests meeting every target, per mode", std::move(charts));
}

json memory_spec(const RunReport& r) {
  json parts = json::array();
  json marks = json::array();
  for (const ModeReport& m : r.modes) {
    for (const TenantReport& t : m.tenants) {
      if (!t.memory) continue;
      const metrics::MemoryReport& mr = *t.memory;
      const std::string bar = fmt::format("{} / {}", m.mode, t.name);
      int order = 0;
      for (const auto& [part, bytes] :
           {std::pair{"weights", mr.weights}, std::pair{"activations", mr.activations},
            std::pair{"KV cache", mr.kv_cache}}) {
        parts.push_back(
            {{"bar", bar}, {"part", part}, {"gib", round6(bytes / kGiB)}, {"order", order++}});
      }
      const double peak = mr.weights + mr.activations + mr.kv_cache * peak_fraction(mr);
      marks.push_back({{"bar", bar},
                       {"budget_gib", round6(mr.budget / kGiB)},
                       {"peak_gib", round6(peak / kGiB)},
                       {"peak_kv", fmt::format("{:.0f}%", 100 * peak_fraction(mr))}});
    }
  }
  if (parts.empty()) return nullptr;
  const json y = {{"field", "bar"}, {"type", "nominal"}, {"sort", nullptr}, {"title", nullptr}};
  const json tick_tooltip = json::array({
      {{"field", "bar"}, {"type", "nominal"}, {"title", "mode / tenant"}},
      {{"field", "budget_gib"}, {"type", "quantitative"}, {"title", "budget (GiB)"}},
      {{"field", "peak_gib"}, {"type", "quantitative"}, {"title", "at peak KV use (GiB)"}},
      {{"field", "peak_kv"}, {"type", "nominal"}, {"title", "peak KV use"}},
  });
  const auto tick = [&](std::string_view field, std::string_view colour) {
    return json{{"data", {{"values", marks}}},
                {"mark", {{"type", "tick"}, {"color", colour}, {"thickness", 3}}},
                {"encoding",
                 {{"x", {{"field", field}, {"type", "quantitative"}}},
                  {"y", y},
                  {"tooltip", tick_tooltip}}}};
  };
  json stack = {
      {"mark", {{"type", "bar"}}},
      {"encoding",
       {{"x", {{"field", "gib"}, {"type", "quantitative"}, {"stack", "zero"}, {"title", "GiB"}}},
        {"y", y},
        {"color",
         {{"field", "part"},
          {"type", "nominal"},
          {"scale",
           {{"domain", json::array({"weights", "activations", "KV cache"})},
            {"range", json::array({"#4c78a8", "#9ecae9", "#f58518"})}}},
          {"legend", {{"title", nullptr}, {"orient", "top"}}}}},
        {"order", {{"field", "order"}}},
        {"tooltip",
         {{{"field", "bar"}, {"type", "nominal"}, {"title", "mode / tenant"}},
          {{"field", "part"}, {"type", "nominal"}},
          {{"field", "gib"}, {"type", "quantitative"}, {"title", "GiB"}}}}}}};
  stack["data"]["values"] = std::move(parts);
  json spec = {{"$schema", kSchema},
               {"title", "GPU memory per mode and tenant (black: budget; red: at peak KV use)"},
               {"width", 560},
               {"height", {{"step", 24}}},
               {"layer", json::array()}};
  spec["layer"].push_back(std::move(stack));
  spec["layer"].push_back(tick("budget_gib", "#000000"));
  spec["layer"].push_back(tick("peak_gib", "#b00000"));
  return spec;
}

void add_run_sections(report::HtmlPage& page, const RunReport& r, std::string_view prefix) {
  const auto heading = [prefix](std::string_view what) {
    return fmt::format("{}{}", prefix, what);
  };
  page.section(heading("Results"))
      .table(results_table(r))
      .paragraph(
          "ms, nearest-rank p50/p99; done/arr: completed/arrived requests; SLO %: arrived "
          "ones meeting all targets; smp: samples.")
      .table(device_table(r));
  const report::Table memory = memory_table(r);
  if (!memory.rows.empty()) page.table(memory);
  const report::Table out_of_memory = out_of_memory_table(r);
  if (!out_of_memory.rows.empty()) {
    page.table(out_of_memory)
        .paragraph(
            "A tenant out of memory in a mode did not run there: it is absent from that mode's "
            "plots.");
  }

  bool samples_missing = false;
  std::vector<json> cdfs;
  for (const TenantReport* t : tenants(r)) {
    if (t->kind != "inference") continue;
    for (const ModeReport& m : r.modes) {
      const TenantReport* in_mode = find_tenant(m, t->name);
      if (in_mode != nullptr && in_mode->inference && !in_mode->samples) samples_missing = true;
    }
    for (const Latency latency : {Latency::kTtft, Latency::kTpot}) {
      json spec = latency_cdf_spec(r, t->name, latency);
      if (!spec.is_null()) cdfs.push_back(std::move(spec));
    }
  }
  if (!cdfs.empty() || samples_missing) {
    page.section(heading("Latency"))
        .paragraph(
            "Per inference tenant and mode, the fraction of requests at or below each TTFT (those "
            "with a first token) and TPOT (completed ones), on a log axis. A TPOT of 0 (a "
            "single-token output) lies off the axis but counts in the fractions.");
    if (samples_missing) {
      page.paragraph("Some modes kept no per-request samples, so their lines are missing.");
    }
    for (const json& spec : cdfs) page.vega_lite(spec);
  }
  page.section(heading("Throughput")).vega_lite(throughput_spec(r));
  if (const json slo = slo_attainment_spec(r); !slo.is_null()) {
    page.section(heading("SLO attainment")).vega_lite(slo);
  }
  if (const json mem = memory_spec(r); !mem.is_null()) {
    page.section(heading("Memory"))
        .paragraph(
            "Each tenant's weights, activations and KV cache as its serving engine laid them "
            "out, against its budget (gpu_memory_utilization of the board); the red tick is "
            "the memory in use at the KV cache's peak.")
        .vega_lite(mem);
  }
}

std::string format_html_report(const RunReport& r) {
  report::HtmlPage page(fmt::format("tessera: {}", r.scenario));
  const double seconds = r.modes.empty() ? 0 : core::to_seconds(r.modes.front().simulated);
  page.paragraph(fmt::format("{} on {} ({}), seed {}; {} s {} per mode.", r.scenario, r.gpu,
                             r.backend, r.seed, metrics::format_number(seconds),
                             r.backend == "simulator" ? "simulated" : "run"));
  add_run_sections(page, r, "");
  return page.render();
}

}  // namespace tessera::scenario
