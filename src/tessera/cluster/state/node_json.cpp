#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/hw/topology/json.hpp"

namespace tessera::cluster {

namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

}  // namespace

nlohmann::json node_json(const ClusterState& state, int node) {
  const NodeState& n = state.node(node);
  const hw::HostTopology& t = n.topology();
  nlohmann::json j = hw::to_json(t);
  j["node"] = n.name();
  const auto user = [&](int owner) -> nlohmann::json {
    if (owner < 0) return nullptr;
    return state.pod(owner).pod.name;
  };
  // Vertex ids are positions in nodes(), as hw::to_json writes them.
  std::vector<int> gpu_of(t.nodes().size(), -1), group_of(t.nodes().size(), -1),
      numa_of(t.nodes().size(), -1);
  for (std::size_t i = 0; i < t.gpus().size(); ++i) gpu_of[at(t.gpus()[i])] = static_cast<int>(i);
  for (std::size_t i = 0; i < t.core_groups().size(); ++i) {
    group_of[at(t.core_groups()[i])] = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < t.numa_nodes().size(); ++i) {
    numa_of[at(t.numa_nodes()[i])] = static_cast<int>(i);
  }
  auto& vertices = j.at("nodes");
  for (std::size_t k = 0; k < vertices.size() && k < t.nodes().size(); ++k) {
    auto& v = vertices[k];
    const int id = static_cast<int>(k);
    int owner = -2;
    if (gpu_of[at(id)] >= 0) owner = n.gpu_owner()[at(gpu_of[at(id)])];
    if (group_of[at(id)] >= 0) owner = n.core_group_owner()[at(group_of[at(id)])];
    if (owner != -2) {
      v["status"] = owner < 0 ? "free" : "allocated";
      v["used_by"] = user(owner);
    }
    if (numa_of[at(id)] >= 0) {
      const int numa = numa_of[at(id)];
      v["memory_used_bytes"] = n.numa_memory_used()[at(numa)];
      nlohmann::json users = nlohmann::json::array();
      for (int p : n.pods()) {
        for (const Assignment::Memory& m : state.pod(p).assignment.memory) {
          if (m.numa == numa && m.bytes > 0) {
            users.push_back({{"pod", state.pod(p).pod.name}, {"bytes", m.bytes}});
          }
        }
      }
      v["memory_used_by"] = std::move(users);
    }
  }
  return j;
}

}  // namespace tessera::cluster
