#pragma once
// What the trace readers' fuzzers check of every input: a reader must return errors, never crash,
// throw or hang. Whatever parses is checked: ids count up from 0, offsets start at 0, never fall
// and stay under the horizon, token counts are >= 1, max_requests caps the count, and every option
// variant agrees with the plain read (options apply after the whole file is checked, so they must
// not change whether it parses, and a capped or cut read is a prefix of the plain one). Every
// parse error must start with the source name.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "tessera/core/time.hpp"
#include "tessera/workload/arrivals.hpp"

namespace tessera::fuzz {

using workload::Request;
using workload::TraceOptions;

inline bool same(const Request& a, const Request& b) {
  return a.id == b.id && a.arrival == b.arrival && a.input_tokens == b.input_tokens &&
         a.output_tokens == b.output_tokens;
}

// The invariants any successful read must hold, whatever the options.
inline void check_requests(const std::vector<Request>& requests, const TraceOptions& o) {
  if (o.max_requests >= 0) require(std::ssize(requests) <= o.max_requests);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    require(r.id == i);
    require(r.arrival >= 0 && r.arrival < o.horizon);
    require(r.input_tokens >= 1 && r.output_tokens >= 1);
    if (i == 0) require(r.arrival == 0);
    if (i > 0) require(r.arrival >= requests[i - 1].arrival);
  }
}

// `part` must be the first `part.size()` requests of `whole`.
inline void check_prefix(std::span<const Request> part, std::span<const Request> whole) {
  require(part.size() <= whole.size());
  for (std::size_t i = 0; i < part.size(); ++i) require(same(part[i], whole[i]));
}

// Reads `text` with `parse` (a workload::parse_trace_* function) under several options and checks
// what comes back.
template <class Parse>
int check_trace_reader(std::string_view text, const std::string& source, Parse parse) {
  const TraceOptions plain{};
  const TraceOptions capped{.max_requests = 3};
  const TraceOptions cut{.horizon = core::seconds(1)};
  const TraceOptions none{.horizon = 0};
  // Stretched so far that late rows of a long trace pass the int64 range of nanoseconds.
  const TraceOptions stretched{.time_scale = 1e9};
  const TraceOptions squeezed{
      .horizon = core::seconds(5), .time_scale = 0.25, .max_requests = 1000};

  const auto whole = parse(text, source, plain);
  if (!whole) {
    require(whole.error().message().starts_with(source));
    for (const TraceOptions& o : {capped, cut, none, stretched, squeezed}) {
      const auto r = parse(text, source, o);
      require(!r && r.error().message() == whole.error().message());
    }
    return 0;
  }
  check_requests(*whole, plain);
  require(!whole->empty());

  for (const TraceOptions& o : {capped, cut, none, stretched, squeezed}) {
    const auto r = parse(text, source, o);
    require(r.has_value());
    check_requests(*r, o);
    require(r->size() <= whole->size());
    // Scaling moves arrivals but keeps each row's token counts.
    for (std::size_t i = 0; i < r->size(); ++i) {
      require((*r)[i].input_tokens == (*whole)[i].input_tokens);
      require((*r)[i].output_tokens == (*whole)[i].output_tokens);
    }
    if (o.time_scale != 1.0) continue;
    // Unscaled, a capped or cut read is the plain read stopped early, and stopped exactly at
    // the cap or at the first arrival at or past the horizon.
    check_prefix(*r, *whole);
    const std::size_t n = r->size();
    if (n < whole->size()) {
      require(std::ssize(*r) == o.max_requests || (*whole)[n].arrival >= o.horizon);
    }
  }
  return 0;
}

}  // namespace tessera::fuzz
