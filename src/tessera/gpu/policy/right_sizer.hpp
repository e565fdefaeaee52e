#pragma once
// LithOS right-sizing (§4.5) as one decision: how many TPCs a kernel gets next, from what has been
// measured of it. Pure: latencies and the fitted curve in, a TPC count out.

#include <optional>
#include <span>

#include "tessera/gpu/policy/kernel_profiles.hpp"

namespace tessera::gpu {

// The TPC count to give a kernel whose grid can spread over `max_tpcs`, walking down from
// `max_tpcs` on measured latencies (`seen`, at the boost clock, one per TPC count) and never past
// what has been seen to stay within `slip` of the latency on `max_tpcs`:
//  - best: the fewest TPCs seen whose latency is within (1 + slip) of the one on max_tpcs;
//  - the next count tried is the fewest that stays within that bound even if the kernel were
//    compute-bound below best (latency x best / t), so a step does not break the slip;
//  - the fitted curve `fit` (right_size) may stop the walk earlier, never push it further.
// A count seen and found too slow is not tried again. Without a positive latency seen on
// max_tpcs, the answer is max_tpcs.
int right_sized_tpcs(std::span<const LatencySample> seen, const std::optional<ScalingFit>& fit,
                     int max_tpcs, double slip);

}  // namespace tessera::gpu
