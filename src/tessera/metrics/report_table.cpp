// RunReport as a plain-text table for a terminal: one row per (mode, tenant), a device line per
// mode and a legend. Column widths follow the content, so typical reports fit 120 columns.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "tessera/metrics/report.hpp"

namespace tessera::metrics {
namespace {

constexpr std::size_t kColumns = 9;
using Row = std::array<std::string, kColumns>;

// Text columns (mode, tenant, kind, throughput) read best left-aligned; numbers right-aligned.
constexpr std::array<bool, kColumns> kLeftAligned = {true,  true,  true,  false, false,
                                                     false, false, false, true};
const Row kHeader = {"mode",         "tenant",  "kind",  "done/arr",  "TTFT p50/p99",
                     "TPOT p50/p99", "E2E p99", "SLO %", "throughput"};
constexpr std::string_view kLegend =
    "ms, nearest-rank p50/p99; done/arr: completed/arrived requests; "
    "SLO %: arrived ones meeting all targets; smp: samples";
constexpr std::string_view kNone = "-";

std::string pair(const Percentiles& p) {
  if (p.count == 0) return std::string(kNone);
  return fmt::format("{}/{}", format_number(p.p50), format_number(p.p99));
}

Row tenant_row(const std::string& mode, const TenantReport& t) {
  Row row = {mode, t.name, t.kind, "", "", "", "", "", ""};
  std::fill(row.begin() + 3, row.end(), std::string(kNone));
  if (t.inference) {
    const InferenceSummary& s = *t.inference;
    row[3] = fmt::format("{}/{}", s.completed, s.arrived);
    row[4] = pair(s.ttft_ms);
    row[5] = pair(s.tpot_ms);
    if (s.e2e_ms.count > 0) row[6] = format_number(s.e2e_ms.p99);
    // Without any target the attainment would only restate done/arr, so it is left blank.
    if (t.slo.ttft > 0 || t.slo.tpot > 0) row[7] = fmt::format("{:.1f}", 100 * s.slo_attainment);
    row[8] = fmt::format("{} tok/s", format_number(s.output_tokens_per_s));
  } else if (t.out_of_memory) {
    row[8] = "out of memory";
  } else if (t.training) {
    const TrainingSummary& s = *t.training;
    row[8] = fmt::format("{} it/s {} smp/s", format_number(s.iterations_per_s),
                         format_number(s.samples_per_s));
  }
  return row;
}

std::string device_line(const ModeReport& m, bool simulated) {
  return fmt::format("  {} device: SM util {:.1f}%, energy {} J, avg power {} W, GPUs {}, {} s {}",
                     m.mode, 100 * m.device.sm_busy_fraction, format_number(m.device.energy_joules),
                     format_number(m.device.average_power_watts), m.gpus,
                     format_number(core::to_seconds(m.simulated)), simulated ? "simulated" : "run");
}

// A tenant's memory, under its mode's device line: only tenants whose KV cache was sized.
std::string memory_line(const ModeReport& m, const TenantReport& t) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const MemoryReport& r = *t.memory;
  const double peak =
      r.kv_blocks > 0 ? 100.0 * static_cast<double>(r.peak_used_blocks) / r.kv_blocks : 0;
  return fmt::format(
      "  {} memory {}: weights {} + activations {} + KV cache {} of {} GiB; {} blocks of {}, peak "
      "{:.0f}%; {} preempted, {} dropped",
      m.mode, t.name, format_number(r.weights / kGiB), format_number(r.activations / kGiB),
      format_number(r.kv_cache / kGiB), format_number(r.budget / kGiB), r.kv_blocks, r.block_size,
      peak, r.preemptions, r.rejected);
}

std::string format_row(const Row& row, const std::array<std::size_t, kColumns>& widths) {
  std::string line;
  for (std::size_t c = 0; c < kColumns; ++c) {
    if (c > 0) line += "  ";
    line += kLeftAligned[c] ? fmt::format("{:<{}}", row[c], widths[c])
                            : fmt::format("{:>{}}", row[c], widths[c]);
  }
  line.erase(line.find_last_not_of(' ') + 1);
  return line;
}

}  // namespace

std::string format_number(double x) {
  if (x >= 100) return fmt::format("{:.0f}", x);
  if (x >= 10) return fmt::format("{:.1f}", x);
  return fmt::format("{:.2f}", x);
}

std::string format_table(const RunReport& report) {
  std::vector<Row> rows;
  std::array<std::size_t, kColumns> widths{};
  auto widen = [&](const Row& row) {
    for (std::size_t c = 0; c < kColumns; ++c) widths[c] = std::max(widths[c], row[c].size());
  };
  widen(kHeader);
  for (const ModeReport& m : report.modes) {
    for (const TenantReport& t : m.tenants) widen(rows.emplace_back(tenant_row(m.mode, t)));
  }

  std::string out = fmt::format("{} on {} ({}), seed {}\n", report.scenario, report.gpu,
                                report.backend, report.seed);
  const std::string header = format_row(kHeader, widths);
  out += header + "\n" + std::string(header.size(), '-') + "\n";
  std::size_t next = 0;
  for (std::size_t i = 0; i < report.modes.size(); ++i) {
    const ModeReport& m = report.modes[i];
    if (i > 0) out += "\n";
    for (std::size_t t = 0; t < m.tenants.size(); ++t)
      out += format_row(rows[next++], widths) + "\n";
    out += device_line(m, report.backend == "simulator") + "\n";
    for (const TenantReport& t : m.tenants) {
      if (t.memory) out += memory_line(m, t) + "\n";
      if (t.out_of_memory) out += fmt::format("  {} {}: {}\n", m.mode, t.name, *t.out_of_memory);
    }
  }
  out += "\n";
  out += kLegend;
  out += "\n";
  return out;
}

}  // namespace tessera::metrics
