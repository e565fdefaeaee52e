#include "tessera/cluster/state/pod.hpp"

namespace tessera::cluster {

std::string_view to_string(Qos q) {
  switch (q) {
    case Qos::kGuaranteed: return "guaranteed";
    case Qos::kBestEffort: return "best-effort";
  }
  return "?";
}

std::string_view to_string(TopologyRequirement r) {
  switch (r) {
    case TopologyRequirement::kNone: return "none";
    case TopologyRequirement::kSocket: return "socket";
    case TopologyRequirement::kNuma: return "numa";
  }
  return "?";
}

std::string_view to_string(Affinity a) {
  switch (a) {
    case Affinity::kSameNuma: return "same-numa";
    case Affinity::kSameSocket: return "same-socket";
    case Affinity::kCrossSocket: return "cross-socket";
  }
  return "?";
}

core::Result<Qos> parse_qos(std::string_view s) {
  if (s == "guaranteed") return Qos::kGuaranteed;
  if (s == "best-effort") return Qos::kBestEffort;
  return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument,
                     "QoS '{}': expected guaranteed or best-effort", s);
}

core::Result<TopologyRequirement> parse_topology_requirement(std::string_view s) {
  if (s == "none") return TopologyRequirement::kNone;
  if (s == "socket") return TopologyRequirement::kSocket;
  if (s == "numa") return TopologyRequirement::kNuma;
  return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument,
                     "topology requirement '{}': expected numa, socket or none", s);
}

bool satisfies(Affinity a, TopologyRequirement r) {
  switch (r) {
    case TopologyRequirement::kNone: return true;
    case TopologyRequirement::kSocket: return a != Affinity::kCrossSocket;
    case TopologyRequirement::kNuma: return a == Affinity::kSameNuma;
  }
  return false;
}

core::Status validate(const Pod& pod) {
  auto bad = [&](std::string_view what) {
    return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument, "pod '{}': {}",
                       pod.name, what);
  };
  if (pod.name.empty()) return bad("has no name");
  if (pod.request.gpus < 0) return bad("requests a negative number of GPUs");
  if (pod.request.cpus < 0) return bad("requests a negative number of CPU cores");
  if (pod.request.memory_bytes < 0) return bad("requests negative memory");
  if (pod.request.gpus == 0 && pod.request.cpus == 0 && pod.request.memory_bytes == 0) {
    return bad("requests no GPUs, CPUs or memory");
  }
  return {};
}

}  // namespace tessera::cluster
