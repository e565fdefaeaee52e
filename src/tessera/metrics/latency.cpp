#include "tessera/metrics/latency.hpp"

#include <algorithm>
#include <numeric>

namespace tessera::metrics {
namespace {

// Nearest rank for integer percent p of n sorted values: ceil(p * n / 100), at least 1. Integer
// arithmetic, so 99% of 100 values is exactly rank 99 (0.99 * 100 in doubles is not).
double nearest_rank(const std::vector<double>& sorted, std::size_t percent) {
  const std::size_t n = sorted.size();
  const std::size_t rank = std::max<std::size_t>(1, (percent * n + 99) / 100);
  return sorted[rank - 1];
}

double rate_per_second(double amount, core::Nanos elapsed) {
  return elapsed > 0 ? amount / core::to_seconds(elapsed) : 0.0;
}

bool meets(const RequestRecord& r, const Slo& slo) {
  if (slo.ttft > 0 && r.ttft() > slo.ttft) return false;
  if (slo.tpot > 0 && r.tpot() > slo.tpot) return false;
  return true;
}

}  // namespace

Percentiles summarize(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  p.count = values.size();
  p.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(p.count);
  p.p50 = nearest_rank(values, 50);
  p.p90 = nearest_rank(values, 90);
  p.p99 = nearest_rank(values, 99);
  p.max = values.back();
  return p;
}

core::Nanos RequestRecord::tpot() const {
  if (output_tokens <= 1 || !done() || first_token < 0) return 0;
  return (finished - first_token) / (output_tokens - 1);
}

InferenceSummary summarize_inference(std::span<const RequestRecord> records, const Slo& slo,
                                     core::Nanos elapsed) {
  InferenceSummary s;
  std::vector<double> ttft, tpot, e2e;
  std::size_t met = 0;
  double output_tokens = 0;
  for (const RequestRecord& r : records) {
    if (r.done() || r.arrival <= elapsed) ++s.arrived;
    if (r.first_token >= 0) ttft.push_back(core::to_millis(r.ttft()));
    if (!r.done()) continue;
    ++s.completed;
    tpot.push_back(core::to_millis(r.tpot()));
    e2e.push_back(core::to_millis(r.e2e()));
    if (meets(r, slo)) ++met;
    output_tokens += r.output_tokens;
  }
  s.ttft_ms = summarize(std::move(ttft));
  s.tpot_ms = summarize(std::move(tpot));
  s.e2e_ms = summarize(std::move(e2e));
  s.slo_attainment =
      s.arrived > 0 ? static_cast<double>(met) / static_cast<double>(s.arrived) : 0.0;
  // Records hold no per-token progress of unfinished requests, so throughput counts only the
  // output tokens of completed requests; a run cut off mid-generation slightly undercounts.
  s.output_tokens_per_s = rate_per_second(output_tokens, elapsed);
  return s;
}

TrainingSummary summarize_training(std::span<const IterationRecord> records, int batch,
                                   core::Nanos elapsed) {
  TrainingSummary s;
  std::vector<double> durations;
  durations.reserve(records.size());
  for (const IterationRecord& r : records) durations.push_back(core::to_millis(r.end - r.start));
  s.iterations = records.size();
  s.iterations_per_s = rate_per_second(static_cast<double>(s.iterations), elapsed);
  s.samples_per_s =
      rate_per_second(static_cast<double>(s.iterations) * std::max(batch, 0), elapsed);
  s.iteration_ms = summarize(std::move(durations));
  return s;
}

}  // namespace tessera::metrics
