#pragma once
// What every trace reader shares once a file's rows are read: the options' checks and the rows
// turned into requests (offsets from the first row, scaled, cut at the horizon and the count).

#include <span>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/workload/arrivals.hpp"

namespace tessera::workload {

struct TraceRow {
  core::Nanos time;  // absolute or from the trace's start: only differences are used
  int input;
  int output;
};

// Fails, naming `source`, on a non-positive time_scale, a max_requests below -1 or a negative
// horizon.
core::Status check_trace_options(const TraceOptions& options, const std::string& source);

// `rows` sorted by time; ids from 0.
std::vector<Request> requests_from_rows(std::span<const TraceRow> rows,
                                        const TraceOptions& options);

}  // namespace tessera::workload
