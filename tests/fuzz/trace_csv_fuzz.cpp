// libFuzzer target for the Azure-format trace reader: arbitrary bytes go to
// workload::parse_trace_csv under several TraceOptions. Library code must return errors, never
// crash, throw or hang. Whatever parses is checked: ids count up from 0, offsets start at 0, never
// fall and stay under the horizon, token counts are >= 1, max_requests caps the count, and every
// option variant agrees with the plain read (options apply after the whole file is checked, so
// they must not change whether it parses, and a capped or cut read is a prefix of the plain one).
// Every parse error must start with the source name.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   apt-get install clang-19 libclang-rt-19-dev
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_trace_csv_fuzz
// Run for 60 s, seeded from the head of a real trace (copied to /tmp: data files from
// ../shared are never committed), keeping what it learns in a scratch corpus:
//   mkdir -p /tmp/trace-seed /tmp/trace-corpus
//   head -n 20 ../shared/data/llm_traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv \
//       > /tmp/trace-seed/azure_code_head.csv
//   build-fuzz/tests/fuzz/tessera_trace_csv_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/trace-corpus /tmp/trace-seed
// A crash leaves crash-<hash> in the working directory; rerun it with the file as the argument.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "tessera/core/time.hpp"
#include "tessera/workload/arrivals.hpp"

namespace {

using tessera::fuzz::require;

using tessera::core::Nanos;
using tessera::workload::Request;
using tessera::workload::TraceOptions;

const std::string kSource = "fuzz.csv";

bool same(const Request& a, const Request& b) {
  return a.id == b.id && a.arrival == b.arrival && a.input_tokens == b.input_tokens &&
         a.output_tokens == b.output_tokens;
}

// The invariants any successful read must hold, whatever the options.
void check_requests(const std::vector<Request>& requests, const TraceOptions& o) {
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
void check_prefix(std::span<const Request> part, std::span<const Request> whole) {
  require(part.size() <= whole.size());
  for (std::size_t i = 0; i < part.size(); ++i) require(same(part[i], whole[i]));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using tessera::core::seconds;
  using tessera::workload::parse_trace_csv;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const TraceOptions plain{};
  const TraceOptions capped{.max_requests = 3};
  const TraceOptions cut{.horizon = seconds(1)};
  const TraceOptions none{.horizon = 0};
  // Stretched so far that late rows of a long trace pass the int64 range of nanoseconds.
  const TraceOptions stretched{.time_scale = 1e9};
  const TraceOptions squeezed{.horizon = seconds(5), .time_scale = 0.25, .max_requests = 1000};

  const auto whole = parse_trace_csv(text, kSource, plain);
  if (!whole) {
    require(whole.error().message().starts_with(kSource));
    for (const TraceOptions& o : {capped, cut, none, stretched, squeezed}) {
      const auto r = parse_trace_csv(text, kSource, o);
      require(!r && r.error().message() == whole.error().message());
    }
    return 0;
  }
  check_requests(*whole, plain);
  require(!whole->empty());

  for (const TraceOptions& o : {capped, cut, none, stretched, squeezed}) {
    const auto r = parse_trace_csv(text, kSource, o);
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
