#pragma once
// The pod mixes the FlexTopo experiments fill their clusters with and scale their services up
// with. The paper names three co-located workloads (A: online LLM service, B: other services,
// C: batch jobs) but gives neither sizes nor shares, so these are tessera's (ASSUMPTION; the .cpp
// lists them):
//   "paper"       A  llm replicas    priority 1000, guaranteed, one NUMA node, 1 GPU (10%) / 2
//   (10%)
//                 B  other services  priority 500, best-effort, socket preferred, 1 GPU (15%) / 2
//                 (5%) C  batch jobs      priority 0, best-effort, 1 GPU (20%) / 2 GPUs (15%)
//                    training jobs   priority 100, best-effort, 4 GPUs (15%) / 8 GPUs (10%)
//   "small"       openb-like (the Alibaba GPU trace: 99% of its GPU pods hold one GPU)
//   "large"       training-heavy
//   "preemptors"  the LLM service scaling up, priority 1000: guaranteed one NUMA node 1 GPU (35%)
//                 / 2 GPUs (25%), guaranteed one socket 4 GPUs (10%), best-effort preferring one
//                 NUMA node 1 GPU (15%) / 2 GPUs (15%)
// Per pod (ASSUMPTION): its GPUs' share of their NUMA node's cores and half their share of its
// memory (the tightest over NUMA nodes with GPUs), so GPUs, not memory, are what is full.

#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/cluster/cluster_workload.hpp"
#include "tessera/core/error.hpp"

namespace tessera::experiment {

// The mix `name` sized for the servers of hw preset `preset`; fails naming an unknown mix or a
// preset without GPUs.
core::Result<std::vector<sim::PodClass>> flextopo_mix(std::string_view name,
                                                      const std::string& preset);

}  // namespace tessera::experiment
