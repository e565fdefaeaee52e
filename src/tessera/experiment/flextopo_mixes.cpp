#include "tessera/experiment/internal/flextopo_mixes.hpp"

#include <algorithm>
#include <span>

#include "tessera/core/try.hpp"
#include "tessera/hw/topology/presets.hpp"

namespace tessera::experiment {
namespace {

using cluster::Qos;
using cluster::TopologyRequirement;

struct ClassSpec {
  const char* name;
  double weight;
  std::int32_t priority;
  Qos qos;
  TopologyRequirement topology;
  int gpus;
};

constexpr ClassSpec kPaperMix[] = {
    {"llm-1", 0.10, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 1},
    {"llm-2", 0.10, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 2},
    {"svc-1", 0.15, 500, Qos::kBestEffort, TopologyRequirement::kSocket, 1},
    {"svc-2", 0.05, 500, Qos::kBestEffort, TopologyRequirement::kSocket, 2},
    {"batch-1", 0.20, 0, Qos::kBestEffort, TopologyRequirement::kNone, 1},
    {"batch-2", 0.15, 0, Qos::kBestEffort, TopologyRequirement::kNone, 2},
    {"train-4", 0.15, 100, Qos::kBestEffort, TopologyRequirement::kNone, 4},
    {"train-8", 0.10, 100, Qos::kBestEffort, TopologyRequirement::kNone, 8},
};
constexpr ClassSpec kSmallMix[] = {
    {"llm-1", 0.20, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 1},
    {"svc-1", 0.20, 500, Qos::kBestEffort, TopologyRequirement::kSocket, 1},
    {"batch-1", 0.55, 0, Qos::kBestEffort, TopologyRequirement::kNone, 1},
    {"train-8", 0.05, 100, Qos::kBestEffort, TopologyRequirement::kNone, 8},
};
constexpr ClassSpec kLargeMix[] = {
    {"llm-2", 0.20, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 2},
    {"svc-2", 0.10, 500, Qos::kBestEffort, TopologyRequirement::kSocket, 2},
    {"train-4", 0.35, 100, Qos::kBestEffort, TopologyRequirement::kNone, 4},
    {"train-8", 0.35, 100, Qos::kBestEffort, TopologyRequirement::kNone, 8},
};
constexpr ClassSpec kPreemptors[] = {
    {"llm-g1", 0.35, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 1},
    {"llm-g2", 0.25, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 2},
    {"llm-g4", 0.10, 1000, Qos::kGuaranteed, TopologyRequirement::kSocket, 4},
    {"llm-be1", 0.15, 1000, Qos::kBestEffort, TopologyRequirement::kNuma, 1},
    {"llm-be2", 0.15, 1000, Qos::kBestEffort, TopologyRequirement::kNuma, 2},
};

core::Result<std::vector<sim::PodClass>> classes_for(std::span<const ClassSpec> specs,
                                                     const std::string& preset) {
  TESSERA_ASSIGN_OR_RETURN(const hw::HostTopology topo, hw::preset(preset, preset));
  const int gpus = static_cast<int>(topo.gpus().size());
  if (gpus == 0) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument, "preset '{}' has no GPUs",
                       preset);
  }
  // Per GPU, the share of its own NUMA node (the tightest over NUMA nodes with GPUs), so a pod
  // that must sit in one NUMA node can.
  int cores_per_gpu = topo.total_cores();
  std::int64_t memory_per_gpu = topo.total_memory_bytes().value_or(0);  // presets give it
  for (int n = 0; n < static_cast<int>(topo.numa_nodes().size()); ++n) {
    const int g = static_cast<int>(topo.gpus_of_numa(n).size());
    if (g == 0) continue;
    int cores = 0;
    for (int cg : topo.core_groups_of_numa(n)) cores += topo.core_group(cg).cores;
    cores_per_gpu = std::min(cores_per_gpu, cores / g);
    memory_per_gpu = std::min(memory_per_gpu, topo.numa(n).local_memory_bytes.value_or(0) / g / 2);
  }
  std::vector<sim::PodClass> out;
  for (const auto& s : specs) {
    sim::PodClass c;
    c.name = s.name;
    c.weight = s.weight;
    c.priority = s.priority;
    c.qos = s.qos;
    c.topology = s.topology;
    c.request.gpus = s.gpus;
    c.request.cpus = s.gpus * cores_per_gpu;
    c.request.memory_bytes = s.gpus * memory_per_gpu;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

core::Result<std::vector<sim::PodClass>> flextopo_mix(std::string_view name,
                                                      const std::string& preset) {
  if (name == "paper") return classes_for(kPaperMix, preset);
  if (name == "small") return classes_for(kSmallMix, preset);
  if (name == "large") return classes_for(kLargeMix, preset);
  if (name == "preemptors") return classes_for(kPreemptors, preset);
  return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                     "unknown pod mix '{}'; known: paper, small, large, preemptors", name);
}

}  // namespace tessera::experiment
