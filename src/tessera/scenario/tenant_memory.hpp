#pragma once
// What each tenant of a scenario holds on the memory it runs in, and which tenants that memory
// cannot hold beside the ones before them. An inference tenant with `kv_cache` holds its
// engine's whole budget (gpu_memory_utilization of that memory), one without holds its weights
// (its KV cache has no limit); a training tenant holds MIGM's static estimate
// (mig/policy/memory_estimate.hpp): weights, gradients, optimizer state, saved activations,
// workspace and CUDA context. Tenants run in their GPU's memory, or in their partition's own (a
// MIG instance's).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/scenario/scenario.hpp"

namespace tessera::scenario {

struct TenantMemory {
  double bytes = 0;
  std::string parts;  // what the bytes hold, for messages
};

// `serving`: an inference tenant's engine layout in the memory it runs in (kv_cache tenants).
TenantMemory tenant_memory(const TenantSpec& t,
                           const std::optional<workload::ServingMemory>& serving);

// A memory tenants share: a GPU's, or a partition's own.
struct MemoryPool {
  std::int64_t bytes = 0;
  std::string name;  // "the H100-SXM5-80GB", "MIG instance chat (3g.40gb)"
};

struct TenantPlacement {
  std::optional<workload::ServingMemory> serving;  // kv_cache tenants, sized in their pool
  std::string out_of_memory;                       // why it cannot run; empty when it runs
};

// The tenants `ids` of `s` on one GPU, `pools[k]` the memory tenant ids[k] runs in (tenants
// naming the same pool share it). In order, each holds its memory if it fits beside those before
// it in its pool; one that does not fit holds nothing, so later ones may still fit.
std::vector<TenantPlacement> place_in_memory(const Scenario& s, std::span<const gpu::TenantId> ids,
                                             std::span<const MemoryPool> pools);

}  // namespace tessera::scenario
