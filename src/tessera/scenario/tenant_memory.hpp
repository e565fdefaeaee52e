#pragma once
// What each tenant of a scenario holds on its GPU, and which tenants a GPU's memory cannot hold
// beside the ones before them. An inference tenant with `kv_cache` holds its engine's whole
// budget (gpu_memory_utilization of the board), one without holds its weights (its KV cache has
// no limit); a training tenant holds MIGM's static estimate (mig/policy/memory_estimate.hpp):
// weights, gradients, optimizer state, saved activations, workspace and CUDA context.

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

TenantMemory tenant_memory(const TenantSpec& t);

// The tenants `ids` of `s`, placed in that order on one of its GPUs: for each, empty when it
// fits beside the ones before it, otherwise why it runs out of memory. A tenant that does not fit
// holds nothing, so later ones may still fit.
std::vector<std::string> out_of_memory(const Scenario& s, std::span<const gpu::TenantId> ids);

}  // namespace tessera::scenario
