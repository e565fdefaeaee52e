#pragma once
// Per-request and per-iteration records, and their summaries.

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/core/time.hpp"

namespace tessera::metrics {

struct Percentiles {
  std::size_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};
// Nearest-rank percentiles of `values` (any unit): the p-th percentile is the smallest value with
// at least p% of the values at or below it, so it is always one of the inputs. An empty input
// gives all zeros.
Percentiles summarize(std::vector<double> values);

struct RequestRecord {
  std::uint64_t id = 0;
  core::Nanos arrival = 0;
  core::Nanos first_token = -1;  // -1 until the prefill that produced it finished
  core::Nanos finished = -1;     // -1 while unfinished
  int input_tokens = 0;
  int output_tokens = 0;

  bool done() const { return finished >= 0; }
  core::Nanos ttft() const { return first_token - arrival; }
  core::Nanos e2e() const { return finished - arrival; }
  // Mean time per output token after the first: (finished - first_token) / (output_tokens - 1).
  // 0 for single-token outputs and for requests that have not finished.
  core::Nanos tpot() const;
};

struct Slo {
  core::Nanos ttft = 0;  // 0: no target
  core::Nanos tpot = 0;  // 0: no target
};

struct InferenceSummary {
  std::size_t arrived = 0;  // records with arrival <= elapsed, plus any that finished
  std::size_t completed = 0;
  Percentiles ttft_ms;  // requests with a first token, finished or not
  Percentiles tpot_ms;
  Percentiles e2e_ms;
  // Fraction of arrived requests that completed within every target; unfinished ones miss.
  double slo_attainment = 0;
  double output_tokens_per_s = 0;
};
// `records` may include requests whose arrival lies beyond the run; the run covers [0, elapsed].
// TTFT (ms) is over requests that have their first token; TPOT and E2E over completed ones.
InferenceSummary summarize_inference(std::span<const RequestRecord> records, const Slo& slo,
                                     core::Nanos elapsed);

struct IterationRecord {
  core::Nanos start = 0;
  core::Nanos end = 0;
};

struct TrainingSummary {
  std::size_t iterations = 0;
  double iterations_per_s = 0;
  double samples_per_s = 0;
  Percentiles iteration_ms;
};
// `records` are finished iterations; `batch` is samples per iteration; rates are over `elapsed`.
TrainingSummary summarize_training(std::span<const IterationRecord> records, int batch,
                                   core::Nanos elapsed);

}  // namespace tessera::metrics
