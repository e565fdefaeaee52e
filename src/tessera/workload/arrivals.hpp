#pragma once
// Request arrival processes for inference tenants: Poisson, bursty (Gamma inter-arrival times)
// and replay of a CSV trace in the Azure LLM inference trace format
// (TIMESTAMP,ContextTokens,GeneratedTokens).

#include <cstdint>
#include <string>
#include <string_view>
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
  double rate_per_s;  // mean arrival rate
  // Coefficient of variation of inter-arrival times: 1 is Poisson; >1 is bursty (Gamma with
  // shape 1/cv^2).
  double cv = 1.0;
  LengthRange input_tokens;
  LengthRange output_tokens;
};

// A cap on one synthetic arrival stream, so a typo in a rate cannot exhaust memory.
inline constexpr double kMaxSyntheticRequests = 50'000'000;

// Arrivals in [0, horizon), ids from 0. Uses its own named streams from `streams` under `name`:
// "<name>/arrivals" for the gaps, "<name>/lengths" for token counts. Rejects a non-positive or
// non-finite rate or cv, length ranges outside 1 <= min <= max, a negative horizon, and specs
// that would produce more than kMaxSyntheticRequests requests (lower the rate or the horizon).
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
//
// Format: a header naming TIMESTAMP, ContextTokens and GeneratedTokens (any order, other
// columns ignored), then one request per line. TIMESTAMP is "YYYY-MM-DD HH:MM:SS" with an
// optional fraction of up to 9 digits. Blank lines are skipped.
//  * Rows must be in non-decreasing time order; a row earlier than the one before it is an
//    error (the published traces are sorted, so disorder means a damaged or concatenated file,
//    which silently re-sorting would hide).
//  * A token count of 0 is read as 1: every request that reached the service ran at least one
//    forward pass over at least one token (a prompt holds its start token; a prefill yields one
//    output token), which is the least work the simulator can schedule. Negative counts are
//    errors.
//  * time_scale must be positive; max_requests must be -1 or non-negative. Options apply after
//    the whole file has been checked, so a malformed row is reported whatever the horizon.
core::Result<std::vector<Request>> load_trace_csv(const std::string& path,
                                                  const TraceOptions& options);

// The same parser over text already in memory; `source_name` stands for the file in messages.
core::Result<std::vector<Request>> parse_trace_csv(std::string_view text,
                                                   const std::string& source_name,
                                                   const TraceOptions& options);

// Reads a trace in the Mooncake format (github.com/kvcache-ai/Mooncake, FAST'25 traces): one JSON
// object per line with `timestamp` (ms from the trace's start, a non-negative number),
// `input_length` and `output_length` (tokens); other fields (`hash_ids`) are ignored. Blank
// lines are skipped. Rows must be in non-decreasing time order; token counts follow
// load_trace_csv's rules (0 reads as 1, negative is an error); the options apply as there.
// Errors name file and line.
core::Result<std::vector<Request>> parse_trace_jsonl(std::string_view text,
                                                     const std::string& source_name,
                                                     const TraceOptions& options);

// A trace file by its name: `.jsonl` is the Mooncake format, anything else the Azure CSV.
core::Result<std::vector<Request>> load_trace(const std::string& path, const TraceOptions& options);

}  // namespace tessera::workload
