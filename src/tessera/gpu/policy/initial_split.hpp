#pragma once
// How the cogpu runtime first divides the SMs among its tenants, before any remap decision (CoGPU
// §4.3 starts every virtual context on a physical one). Pure: the grid and the tenants in, the
// layout order and sizes out.

#include <cstddef>
#include <span>
#include <vector>

#include "tessera/gpu/policy/physical_contexts.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

struct InitialSplit {
  // Tenant indices (into the tenants given) in the order partitions are laid out from SM 0:
  // latency-critical tenants first, then best-effort ones, each in the order given, so that the
  // partitions that change most (best-effort) sit at the end and remaps move little.
  std::vector<std::size_t> order;
  // SMs per partition, in `order`: the grid's granules shared evenly, the first ones taking one
  // granule more where they do not divide. Each is a multiple of the granularity and they add up
  // to at most grid.usable_sms.
  std::vector<int> sms;
};

// The split for `tenants` on `grid`. Every tenant gets at least grid.min_sms when
// tenants.size() * grid.min_sms <= grid.usable_sms (the runtime refuses more tenants than that).
InitialSplit initial_split(const PartitionGrid& grid, std::span<const TenantInfo> tenants);

}  // namespace tessera::gpu
