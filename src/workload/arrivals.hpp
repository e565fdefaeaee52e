#pragma once
// Request arrival processes for inference tenants: Poisson, bursty (Gamma inter-arrival times)
// and replay of a CSV trace in the Azure LLM inference trace format
// (TIMESTAMP,ContextTokens,GeneratedTokens).

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/time.hpp"

namespace tessera::workload {

struct Request {
  std::uint64_t id;
  core::Nanos arrival;
  int input_tokens;
  int output_tokens;  // >= 1
};

// Token counts for synthetic arrivals: each length is drawn uniformly in [min, max].
struct LengthRange {
  int min;
  int max;
};

struct SyntheticArrivals {
  double rate_per_s;       // mean arrival rate
  // Coefficient of variation of inter-arrival times: 1 is Poisson; >1 is bursty (Gamma with
  // shape 1/cv^2).
  double cv = 1.0;
  LengthRange input_tokens;
  LengthRange output_tokens;
};

// Arrivals in [0, horizon), ids from 0. Uses its own named streams from `streams` under `name`.
core::Result<std::vector<Request>> generate_arrivals(const SyntheticArrivals& spec,
                                                     core::Nanos horizon,
                                                     const core::RandomStreams& streams,
                                                     const std::string& name);

struct TraceOptions {
  core::Nanos horizon = core::kNever;  // drop requests arriving at or after this offset
  double time_scale = 1.0;             // >1 stretches the trace (slower arrivals)
  std::int64_t max_requests = -1;      // -1: all
};

// Reads an Azure-format CSV; times become offsets from the first row. Errors name file and line.
core::Result<std::vector<Request>> load_trace_csv(const std::string& path,
                                                  const TraceOptions& options);

}  // namespace tessera::workload
