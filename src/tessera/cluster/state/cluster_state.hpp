#pragma once
// The cluster as the scheduling policies see it: nodes (topology + allocation) and the pods bound
// to them. A plain value: the policies read it and return decisions; the extender and the cluster
// simulator apply those decisions with bind() and evict().

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/cluster/state/node_state.hpp"
#include "tessera/cluster/state/pod.hpp"

namespace tessera::cluster {

struct BoundPod {
  Pod pod;
  int node = -1;  // index into nodes(); -1 once evicted or finished
  Assignment assignment;
};

class ClusterState {
 public:
  // Fails when the name is taken.
  core::Result<int> add_node(std::string name, std::shared_ptr<const hw::HostTopology> topology);
  // Replaces a node's topology (an agent's refresh). Pods bound there stay when their assignment
  // still fits the new topology; otherwise it fails and nothing changes.
  core::Status update_topology(int node, std::shared_ptr<const hw::HostTopology> topology);

  const std::vector<NodeState>& nodes() const { return nodes_; }
  const NodeState& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
  std::optional<int> find_node(std::string_view name) const;

  // Every pod ever bound, by index; evicted and finished ones keep their slot with node == -1.
  const std::vector<BoundPod>& pods() const { return pods_; }
  const BoundPod& pod(int i) const { return pods_[static_cast<std::size_t>(i)]; }
  // A pod bound now, by name.
  std::optional<int> find_pod(std::string_view name) const;
  // pod(i).pod.priority, from a compact table (the preemption searches read many).
  std::int32_t priority(int i) const { return priorities_[static_cast<std::size_t>(i)]; }
  // The lowest priority of any pod bound now; nullopt when none is.
  std::optional<std::int32_t> lowest_bound_priority() const;
  // The nodes that hold pods, as (lowest priority among the pods holding resources there, node),
  // in that order: where a preemption search finds the cheapest victims first.
  const std::set<std::pair<std::int32_t, int>>& nodes_by_lowest_priority() const {
    return by_lowest_;
  }

  // Binds `pod` to `node` with `assignment` (placement.hpp computes one). Fails without changing
  // anything when the pod name is already bound or the resources are held.
  core::Result<int> bind(Pod pod, int node, const Assignment& assignment);
  // Frees what pod `index` holds (eviction or completion). No-op when it is not bound.
  void evict(int index);

 private:
  // Brings `node`'s entry in by_lowest_ up to date with its holdings.
  void reindex_lowest(int node);

  std::vector<NodeState> nodes_;
  std::vector<BoundPod> pods_;
  std::unordered_map<std::string, int> node_index_;
  std::unordered_map<std::string, int> bound_index_;  // pod name -> index, bound pods only
  std::vector<std::int32_t> priorities_;              // by pod index
  std::map<std::int32_t, int> bound_priorities_;      // priority -> how many bound pods have it
  std::vector<std::optional<std::int32_t>> lowest_;   // by node: its by_lowest_ key, if any
  std::set<std::pair<std::int32_t, int>> by_lowest_;
};

// A node's topology graph with its allocation status and users (FlexTopo's status / used-by), as
// JSON: hw::to_json(topology) plus, per GPU and core group, "status": "free"|"allocated" and
// "used_by": pod name, and per NUMA node "memory_used_bytes".
nlohmann::json node_json(const ClusterState& state, int node);

}  // namespace tessera::cluster
