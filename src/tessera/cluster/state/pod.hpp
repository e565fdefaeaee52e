#pragma once
// A pod as the cluster level sees it (FlexTopo, arXiv 2411.11560, §3.3-3.4): what it asks for,
// how important it is, and what topology it needs. The Kubernetes extender translates v1.Pod into
// this (k8s/pod_translation.hpp); the cluster simulator generates them.

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::cluster {

// Guaranteed: the topology requirement is a hard filter (a node that cannot meet it is not a
// candidate; a preemption that does not free a fitting place is not a candidate).
// Best-effort: the requirement is a preference; candidates that meet it sort first.
enum class Qos : std::uint8_t { kGuaranteed, kBestEffort };
// Where a pod's GPUs, core groups and memory must all lie.
enum class TopologyRequirement : std::uint8_t { kNone, kSocket, kNuma };
// Where a placement's GPUs, core groups and memory do lie; ordered best first.
enum class Affinity : std::uint8_t { kSameNuma, kSameSocket, kCrossSocket };

std::string_view to_string(Qos q);                  // "guaranteed", "best-effort"
std::string_view to_string(TopologyRequirement r);  // "none", "socket", "numa"
std::string_view to_string(Affinity a);             // "same-numa", "same-socket", "cross-socket"
core::Result<Qos> parse_qos(std::string_view s);
core::Result<TopologyRequirement> parse_topology_requirement(std::string_view s);
// Whether a placement at `a` meets `r` (kNone: always).
bool satisfies(Affinity a, TopologyRequirement r);

struct Resources {
  int gpus = 0;
  int cpus = 0;  // physical cores; allocated in whole core groups of the node
  std::int64_t memory_bytes = 0;
};

struct Pod {
  std::string name;  // unique in the cluster ("namespace/name" from Kubernetes)
  std::string uid;   // Kubernetes' UID when known (the extender's victims are named by it)
  std::int32_t priority = 0;
  Qos qos = Qos::kBestEffort;
  Resources request;
  TopologyRequirement topology = TopologyRequirement::kNone;
  // Start order, for the default Kubernetes preemption's last tie-break (the newest victim is
  // preferred... see preemption.hpp); a larger number started later.
  std::int64_t start_seq = 0;
};

// Rejects a pod the scheduler cannot reason about, naming the field: empty name, negative
// requests, a request of nothing.
core::Status validate(const Pod& pod);

}  // namespace tessera::cluster
