#include "tessera/validation/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/validation/profile_readers.hpp"
#include "tessera/validation/split.hpp"

namespace tessera::validation {

namespace {

double nearest_rank(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::ranges::sort(v);
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// A row's source for the per-source table: the profile's top directory ("vidur_compute"), or
// the file for a user's measurements.
std::string source_of(const std::string& source) {
  const std::string_view family = profile_family(source);
  return family.empty() ? source.substr(0, source.find(':')) : std::string(family);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string describe(const Measurement& m) {
  // The GEMM library a row declares, when it declares one.
  const std::string library =
      m.gemm_stream_k ? (*m.gemm_stream_k ? " (stream-k)" : " (no stream-k)") : "";
  switch (m.kind) {
    case MeasuredKind::kGemm:
      return fmt::format("{} m={} n={} k={}{}", workload::to_string(m.precision), m.m, m.n, m.k,
                         library);
    case MeasuredKind::kLayerKernels:
    case MeasuredKind::kStep: {
      const int first = m.lengths.empty() ? 0 : m.lengths.front();
      const bool same = std::ranges::all_of(m.lengths, [&](int l) { return l == first; });
      const std::string lengths = same ? fmt::format("{}x{}", m.lengths.size(), first)
                                       : fmt::format("{} sequences", m.lengths.size());
      return fmt::format("{} tp{} {} {}{}{}", m.model.name, m.tensor_parallel,
                         workload::to_string(m.phase), lengths,
                         m.kind == MeasuredKind::kLayerKernels
                             ? fmt::format(" [{}]", fmt::join(m.layer_kernels, "+"))
                             : std::string{},
                         library);
    }
    case MeasuredKind::kCollective:
      return fmt::format("{} {} GPUs {} bytes {}",
                         m.collective == Collective::kAllReduce ? "all_reduce" : "send_recv",
                         m.gpus, m.bytes, m.interconnect);
  }
  return "";
}

core::Result<ValidationReport> validate(MeasurementSet set, Predictor& predictor, std::size_t worst,
                                        const ValidateProgress& progress) {
  ValidationReport report;
  report.skipped = std::move(set.skipped);
  std::map<std::pair<std::string, std::string>, std::int64_t> unsupported;
  const std::size_t total = set.rows.size();
  for (std::size_t i = 0; i < total; ++i) {
    Measurement& m = set.rows[i];
    if (progress && i % 256 == 0) progress(i, total);
    std::optional<std::string> why = Predictor::unsupported(m);
    core::Result<workload::KernelSequence> seq = workload::KernelSequence{};
    if (!why) {
      seq = predictor.kernels(m);
      if (!seq) return std::unexpected(seq.error());
      why = predictor.implausible(m, *seq);
    }
    if (why) {
      const std::string file = m.source.substr(0, m.source.find(':'));
      // Implausible rows differ in their figures: they are grouped by what they have in common.
      ++unsupported[{file, why->substr(0, why->find(" ("))}];
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(const double ns, predictor.simulate_ns(m, *seq));
    RowResult r;
    r.category = category(m);
    r.fitted = fitted_on(m);
    r.simulated_ns = ns;
    r.error = (ns - m.measured_ns) / m.measured_ns;
    r.measurement = std::move(m);
    report.rows.push_back(std::move(r));
  }
  if (progress) progress(total, total);
  for (const auto& [key, rows] : unsupported) {
    report.skipped.push_back({.source = key.first, .reason = key.second, .rows = rows});
  }

  std::map<std::string, std::vector<std::size_t>> by_category;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    by_category[report.rows[i].category].push_back(i);
  }
  for (auto& [name, all] : by_category) {
    CategoryStats c;
    c.category = name;
    std::vector<std::size_t> indices;
    std::vector<double> abs_errors;
    std::vector<double> errors;
    std::vector<double> fitted_abs_errors;
    for (std::size_t i : all) {
      const RowResult& row = report.rows[i];
      if (row.fitted) {
        fitted_abs_errors.push_back(std::abs(row.error));
        continue;
      }
      indices.push_back(i);
      abs_errors.push_back(std::abs(row.error));
      errors.push_back(row.error);
    }
    c.rows = indices.size();
    c.median_abs_error = nearest_rank(abs_errors, 0.5);
    c.p90_abs_error = nearest_rank(abs_errors, 0.9);
    c.median_error = nearest_rank(errors, 0.5);
    c.fitted_rows = fitted_abs_errors.size();
    c.fitted_median_abs_error = nearest_rank(fitted_abs_errors, 0.5);
    c.fitted_p90_abs_error = nearest_rank(std::move(fitted_abs_errors), 0.9);
    // Worst first; ties keep the rows' order, so the table is the same on every run.
    std::ranges::stable_sort(indices, [&](std::size_t a, std::size_t b) {
      return std::abs(report.rows[a].error) > std::abs(report.rows[b].error);
    });
    indices.resize(std::min(indices.size(), worst));
    c.worst = std::move(indices);
    report.categories.push_back(std::move(c));
  }

  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> by_source;
  for (const RowResult& row : report.rows) {
    if (row.fitted) continue;
    by_source[{row.category, source_of(row.measurement.source), row.measurement.gpu}].push_back(
        row.error);
  }
  for (auto& [key, errors] : by_source) {
    SourceStats s;
    std::tie(s.category, s.source, s.gpu) = key;
    s.rows = errors.size();
    std::vector<double> abs_errors;
    for (double e : errors) abs_errors.push_back(std::abs(e));
    s.median_abs_error = nearest_rank(abs_errors, 0.5);
    s.p90_abs_error = nearest_rank(std::move(abs_errors), 0.9);
    s.median_error = nearest_rank(std::move(errors), 0.5);
    report.sources.push_back(std::move(s));
  }
  return report;
}

std::string format_report(const ValidationReport& r) {
  std::size_t width = 8;
  for (const auto& c : r.categories) width = std::max(width, c.category.size());
  std::string out = fmt::format(
      "Rows not fitted on (the calibration's split: docs/validate.md), and apart the rows it was "
      "fitted on\n{:<{}}  {:>7}  {:>12}  {:>9}  {:>13}  {:>11}  {:>12}  {:>9}\n",
      "category", width, "rows", "median |err|", "P90 |err|", "median error", "fitted rows",
      "median |err|", "P90 |err|");
  const auto percent = [](std::size_t rows, double value, int width) {
    return rows == 0 ? fmt::format("{:>{}}", "-", width)
                     : fmt::format("{:>{}.1f}%", value * 100, width - 1);
  };
  for (const auto& c : r.categories) {
    out += fmt::format(
        "{:<{}}  {:>7}  {}  {}  {}  {:>11}  {}  {}\n", c.category, width, c.rows,
        percent(c.rows, c.median_abs_error, 12), percent(c.rows, c.p90_abs_error, 9),
        c.rows == 0 ? fmt::format("{:>13}", "-") : fmt::format("{:>+12.1f}%", c.median_error * 100),
        c.fitted_rows, percent(c.fitted_rows, c.fitted_median_abs_error, 12),
        percent(c.fitted_rows, c.fitted_p90_abs_error, 9));
  }
  if (!r.sources.empty()) {
    std::size_t cw = 8;
    std::size_t sw = 6;
    for (const auto& s : r.sources) {
      cw = std::max(cw, s.category.size());
      sw = std::max(sw, s.source.size());
    }
    out += fmt::format(
        "\nby source (rows not fitted on)\n{:<{}}  {:<{}}  {:<15}  {:>7}  {:>12}  "
        "{:>9}  {:>13}\n",
        "category", cw, "source", sw, "GPU", "rows", "median |err|", "P90 |err|", "median error");
    for (const auto& s : r.sources) {
      out += fmt::format("{:<{}}  {:<{}}  {:<15}  {:>7}  {:>11.1f}%  {:>8.1f}%  {:>+12.1f}%\n",
                         s.category, cw, s.source, sw, s.gpu, s.rows, s.median_abs_error * 100,
                         s.p90_abs_error * 100, s.median_error * 100);
    }
  }
  out += fmt::format("{} rows compared", r.rows.size());
  std::int64_t skipped = 0;
  for (const auto& s : r.skipped) skipped += s.rows;
  out += skipped > 0 ? fmt::format(", {} skipped (below)\n", skipped) : std::string("\n");
  for (const auto& c : r.categories) {
    if (c.worst.empty()) continue;
    out += fmt::format("\nworst of {}:\n", c.category);
    for (std::size_t i : c.worst) {
      const RowResult& row = r.rows[i];
      out +=
          fmt::format("  {:>+7.1f}%  measured {:>10.2f} us  simulated {:>10.2f} us  {}  {}  {}\n",
                      row.error * 100, row.measurement.measured_ns / 1e3, row.simulated_ns / 1e3,
                      row.measurement.gpu, describe(row.measurement), row.measurement.source);
    }
  }
  if (!r.skipped.empty()) {
    out += "\nskipped:\n";
    for (const auto& s : r.skipped) {
      out += fmt::format("  {:>7} rows  {}: {}\n", s.rows, s.source, s.reason);
    }
  }
  return out;
}

std::string to_csv(const ValidationReport& r) {
  std::string out = "source,gpu,category,configuration,fitted,measured_us,simulated_us,error\n";
  for (const auto& row : r.rows) {
    out += fmt::format("{},{},{},{},{},{:.4f},{:.4f},{:.5f}\n", csv_field(row.measurement.source),
                       csv_field(row.measurement.gpu), csv_field(row.category),
                       csv_field(describe(row.measurement)), row.fitted ? 1 : 0,
                       row.measurement.measured_ns / 1e3, row.simulated_ns / 1e3, row.error);
  }
  return out;
}

}  // namespace tessera::validation
