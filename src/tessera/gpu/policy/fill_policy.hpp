#pragma once
// The policy of "priority-fill" (modes/priority_fill/): latency-critical tenants run first on the
// whole GPU, best-effort tenants fill what they leave. Pure: tenants' state in, each stream's SM
// set out; it never calls the device and never reads a clock.
//
// A tenant is served first when it is latency-critical and has a latency target (a TTFT or TPOT
// SLO); every other one, an inference service without a target included, is best-effort here.
//
// - Stream priorities order block dispatch: a latency-critical kernel places its blocks before
//   any best-effort kernel grows or starts, and more important latency-critical tenants before
//   less important ones. Running blocks are never preempted, so a latency-critical kernel waits
//   at most for the best-effort blocks on the SMs it needs to end.
// - While any latency-critical tenant has work in flight, best-effort tenants are held to a
//   reserve of `best_effort_share` of the SMs (the highest-numbered ones, away from the free SMs
//   the block scheduler fills first): bandwidth and issue slots go to the latency-critical
//   kernels everywhere else. When none has, best-effort tenants get every SM.
// - The change applies at kernel boundaries (a stream's SM set changes from its next kernel), so
//   no kernel is split and outputs stay those of the unshared run.
// - The reserve is fixed (`best_effort_share`), or follows the latency-critical tenants' SLO slack
//   (next_reserve): it grows a grid step after each of their steps that ended well inside its
//   budget and halves after one that did not, never below the fixed share.

#include <span>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/device/sm_mask.hpp"
#include "tessera/gpu/policy/physical_contexts.hpp"

namespace tessera::gpu {

// Whether priority-fill serves a tenant first: latency-critical with a TTFT or TPOT target.
constexpr bool served_first(bool latency_critical, core::Nanos ttft_slo, core::Nanos tpot_slo) {
  return latency_critical && (ttft_slo > 0 || tpot_slo > 0);
}

struct FillTenant {
  bool latency_critical = false;  // latency-critical with a latency target
  int priority = 0;
  bool busy = false;  // a submission queued or running
};

// Stream priority per tenant, same order: 0 for best-effort tenants; latency-critical tenants
// from 1, one level per distinct TenantInfo::priority, least important lowest.
std::vector<int> fill_stream_priorities(std::span<const FillTenant> tenants);

// The reserve for `best_effort_share` in (0, 1]: that fraction of grid.usable_sms, rounded up to
// the grid (so never less than its minimum partition).
int reserve_sms(const PartitionGrid& grid, double best_effort_share);

// SM set per tenant, same order; an empty mask is every SM (device::StreamConfig's convention).
// While a latency-critical tenant is busy, best-effort tenants get the highest `reserve` usable
// SMs (a size on the grid).
std::vector<device::SmMask> fill_sm_sets(const PartitionGrid& grid, int reserve,
                                         std::span<const FillTenant> tenants);

// A latency-critical tenant's step (a prefill or decode submission, from its submission to its
// end) took `latency`; its budget is the share of its TTFT or TPOT target one step may take
// (kSloStepBudget of the target, as the remap policies size partitions). Returns the next
// reserve: halved (rounded down to the grid, not below `floor`) when the step passed the budget,
// one grid step larger (at most every usable SM) when it took less than kReserveGrowBelow of it,
// else `current`.
inline constexpr double kReserveGrowBelow = 0.8;
int next_reserve(const PartitionGrid& grid, int floor, int current, core::Nanos latency,
                 core::Nanos budget);

}  // namespace tessera::gpu
