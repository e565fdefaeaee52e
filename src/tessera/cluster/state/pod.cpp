#include "tessera/cluster/state/pod.hpp"

#include "tessera/core/enum_table.hpp"

namespace tessera::cluster {
namespace {

constexpr core::EnumTable<Qos, 2> kQos("QoS", core::Domain::kCluster,
                                       {{{Qos::kGuaranteed, "guaranteed"},
                                         {Qos::kBestEffort, "best-effort"}}});
// Strictest first.
constexpr core::EnumTable<TopologyRequirement, 3> kTopologyRequirements(
    "topology requirement", core::Domain::kCluster,
    {{{TopologyRequirement::kNuma, "numa"},
      {TopologyRequirement::kSocket, "socket"},
      {TopologyRequirement::kNone, "none"}}});

}  // namespace

std::string_view to_string(Affinity a) {
  switch (a) {
    case Affinity::kSameNuma: return "same-numa";
    case Affinity::kSameSocket: return "same-socket";
    case Affinity::kCrossSocket: return "cross-socket";
  }
  return "?";
}

std::string_view to_string(Qos q) {
  return kQos.to_string(q);
}
std::string_view to_string(TopologyRequirement r) {
  return kTopologyRequirements.to_string(r);
}
core::Result<Qos> parse_qos(std::string_view s) {
  return kQos.parse(s);
}
core::Result<TopologyRequirement> parse_topology_requirement(std::string_view s) {
  return kTopologyRequirements.parse(s);
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
