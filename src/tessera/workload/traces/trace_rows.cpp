#include "tessera/workload/traces/trace_rows.hpp"

#include <cmath>

namespace tessera::workload {

core::Status check_trace_options(const TraceOptions& o, const std::string& source) {
  if (!std::isfinite(o.time_scale) || o.time_scale <= 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "trace {}: time_scale must be a positive number (1 replays in real "
                       "time, 2 stretches the trace to half the rate), got {}",
                       source, o.time_scale);
  }
  if (o.max_requests < -1) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "trace {}: max_requests must be -1 (all) or a count >= 0, got {}", source,
                       o.max_requests);
  }
  if (o.horizon < 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                       "trace {}: horizon must not be negative, got {} ns", source, o.horizon);
  }
  return {};
}

std::vector<Request> requests_from_rows(std::span<const TraceRow> rows,
                                        const TraceOptions& options) {
  std::vector<Request> out;
  if (rows.empty()) return out;
  const core::Nanos first = rows.front().time;
  for (const TraceRow& r : rows) {
    if (options.max_requests >= 0 &&
        static_cast<std::int64_t>(out.size()) >= options.max_requests) {
      break;
    }
    const core::Nanos raw = r.time - first;
    core::Nanos offset = raw;
    if (options.time_scale != 1.0) {
      const double scaled = std::round(static_cast<double>(raw) * options.time_scale);
      // At 2^63 ns or later (about 292 years) the offset does not fit in Nanos, and it is past
      // every horizon, kNever included.
      if (scaled >= 0x1p63) break;
      offset = static_cast<core::Nanos>(scaled);
    }
    if (offset >= options.horizon) break;  // rows are sorted: every later one is later still
    out.push_back(Request{
        .id = out.size(), .arrival = offset, .input_tokens = r.input, .output_tokens = r.output});
  }
  return out;
}

}  // namespace tessera::workload
