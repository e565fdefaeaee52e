// Replay of request traces in the Mooncake format (github.com/kvcache-ai/Mooncake,
// FAST25-release/traces): {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids":
// [...]} per line.

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tessera/core/file_read.hpp"
#include "tessera/core/try.hpp"
#include "tessera/workload/arrivals.hpp"
#include "tessera/workload/traces/trace_rows.hpp"

namespace tessera::workload {

namespace {

using nlohmann::json;

class LineError {
 public:
  LineError(const std::string& source, int line) : source_(source), line_(line) {}
  core::Error operator()(std::string_view what) const {
    return core::Error(core::Domain::kWorkload, core::Code::kParse,
                       fmt::format("{}:{}: {}", source_, line_, what));
  }

 private:
  const std::string& source_;
  int line_;
};

core::Result<const json*> field(const json& row, std::string_view name, const LineError& error) {
  const auto it = row.find(name);
  if (it == row.end()) {
    return std::unexpected(error(fmt::format(
        "no '{}' field; a Mooncake trace row holds timestamp, input_length and output_length",
        name)));
  }
  if (!it->is_number()) {
    return std::unexpected(error(fmt::format("'{}' must be a number, got {}", name, it->dump())));
  }
  return &*it;
}

core::Result<int> tokens(const json& row, std::string_view name, const LineError& error) {
  TESSERA_ASSIGN_OR_RETURN(const json* v, field(row, name, error));
  if (!v->is_number_integer()) {
    return std::unexpected(
        error(fmt::format("'{}' must be a whole number of tokens, got {}", name, v->dump())));
  }
  const auto n = v->is_number_unsigned() ? static_cast<double>(v->get<std::uint64_t>())
                                         : static_cast<double>(v->get<std::int64_t>());
  if (n < 0) {
    return std::unexpected(
        error(fmt::format("'{}' must not be negative, got {}", name, v->dump())));
  }
  if (n > INT_MAX) {
    return std::unexpected(
        error(fmt::format("'{}' of {} tokens is larger than {}", name, v->dump(), INT_MAX)));
  }
  // 0 reads as 1: see load_trace_csv in arrivals.hpp.
  return std::max(static_cast<int>(n), 1);
}

// Milliseconds from the trace's start, as nanoseconds.
core::Result<core::Nanos> timestamp(const json& row, const LineError& error) {
  TESSERA_ASSIGN_OR_RETURN(const json* v, field(row, "timestamp", error));
  const double ms = v->get<double>();
  // 9.2e12 ms is the most a 64-bit count of nanoseconds holds (about 292 years).
  if (!std::isfinite(ms) || ms < 0 || ms >= 9.2e12) {
    return std::unexpected(error(fmt::format(
        "'timestamp' must be milliseconds from the trace's start, from 0 to under 9.2e12, got {}",
        v->dump())));
  }
  return static_cast<core::Nanos>(std::llround(ms * 1e6));
}

}  // namespace

core::Result<std::vector<Request>> parse_trace_jsonl(std::string_view text,
                                                     const std::string& source_name,
                                                     const TraceOptions& options) {
  TESSERA_TRY(check_trace_options(options, source_name));
  std::vector<TraceRow> rows;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const LineError error(source_name, line_no);
    const json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() || !row.is_object()) {
      return std::unexpected(
          error("expected one JSON object per line, like {\"timestamp\": 0, "
                "\"input_length\": 512, \"output_length\": 64}"));
    }
    TESSERA_ASSIGN_OR_RETURN(const core::Nanos time, timestamp(row, error));
    if (!rows.empty() && time < rows.back().time) {
      return std::unexpected(error(
          fmt::format("'timestamp' {} is earlier than the row before it; the trace must be sorted "
                      "by time",
                      row["timestamp"].dump())));
    }
    TESSERA_ASSIGN_OR_RETURN(const int input, tokens(row, "input_length", error));
    TESSERA_ASSIGN_OR_RETURN(const int output, tokens(row, "output_length", error));
    rows.push_back(TraceRow{.time = time, .input = input, .output = output});
  }
  if (rows.empty()) {
    return core::failf(core::Domain::kWorkload, core::Code::kParse,
                       "{}: no request rows; a Mooncake trace holds one JSON object per line",
                       source_name);
  }
  return requests_from_rows(rows, options);
}

core::Result<std::vector<Request>> load_trace(const std::string& path,
                                              const TraceOptions& options) {
  if (!path.ends_with(".jsonl")) return load_trace_csv(path, options);
  auto text = core::read_file(
      path,
      {.what = "trace file", .domain = core::Domain::kWorkload, .max_bytes = core::kMaxTableBytes});
  if (!text) return std::unexpected(text.error());
  return parse_trace_jsonl(*text, path, options);
}

}  // namespace tessera::workload
