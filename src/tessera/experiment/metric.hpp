#pragma once
// The figures an experiment reads off a run: one number per (metric, mode) of a
// metrics::RunReport, computed the same way for every policy so the rows compare.

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/metrics/report.hpp"

namespace tessera::experiment {

enum class Quantity {
  kTtftP99Ms,  // a tenant's time to first token, 99th percentile
  kTpotP99Ms,  // a tenant's time per output token after the first, 99th percentile
  kE2eP99Ms,   // a tenant's request latency (arrival to last token), 99th percentile
  // A tenant's e2e P99 over its e2e P99 alone on a GPU (the run's `exclusive` mode): how far a
  // policy keeps it from the physical limit (the goal: within 1.2x).
  kE2eP99VsAlone,
  kTpotP99VsAlone,  // the same for its time per output token
  kTtftMeanMs,
  kTpotMeanMs,
  kSloViolationPct,  // a tenant's arrived requests that missed a target or did not finish, in %
  kThroughput,       // a tenant's output tokens/s (inference) or samples/s (training)
  // A tenant's throughput over its throughput alone on a GPU (the run's `exclusive` mode).
  kNormalizedThroughput,
  // A tenant's throughput over its throughput under `mps` in the same run: what a policy gives
  // best-effort work against the GPU's own sharing.
  kThroughputVsMps,
  // The sum of every tenant's normalized throughput (LithOS's aggregate throughput).
  kAggregateNormalizedThroughput,
  // The same sum over the training tenants only.
  kTrainingNormalizedThroughput,
  kEnergyJ,  // device energy over the run, all of the mode's GPUs
  kCounter,  // one of the mode's own counters (SharingMode::counters), by name
};

struct Metric {
  Quantity quantity;
  std::string tenant;   // the tenant it is about; empty for aggregates and device figures
  std::string counter;  // kCounter: the counter's name, unit included
  // kCounter: whether a smaller value is the better one (TPCs held, an error); other quantities
  // know their own direction.
  bool counter_lower_is_better = false;
};

// True when a smaller value is the better one (latencies, violations, energy).
bool lower_is_better(const Metric& metric);
// A short column heading with the unit, e.g. "hp e2e p99 ms".
std::string label(const Metric& metric);

// The metric's value in mode `mode` of `report`. Errors name what is missing: the mode, the
// tenant, the exclusive reference run, or a tenant kind the quantity does not apply to.
core::Result<double> metric_value(const metrics::RunReport& report, const Metric& metric,
                                  std::string_view mode);

}  // namespace tessera::experiment
