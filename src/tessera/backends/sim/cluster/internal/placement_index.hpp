#pragma once
// cluster::place's decision kept current as pods bind and leave, for the scenario simulator (not a
// public header). place scores every node of the cluster for every pod; on a cluster of N nodes
// whose workload grows with N that is O(N^2) over a run. Here each pod shape keeps the nodes where
// it fits acceptably in place's order, so a decision reads the first one and a change to a node
// re-ranks only that node, once per shape: O(shapes x log N).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "tessera/cluster/policy/placement.hpp"
#include "tessera/cluster/state/cluster_state.hpp"

namespace tessera::sim::detail {

class PlacementIndex {
 public:
  // `state` must outlive the index; its node list must not grow after the first place().
  explicit PlacementIndex(const cluster::ClusterState& state) : state_(state) {}

  // cluster::place(state, pod).placement, for a pod that passes cluster::validate: the node where
  // it fits acceptably at the best affinity, then the highest score_node, then the lowest index,
  // with best_assignment there. nullopt when no node holds it acceptably.
  std::optional<cluster::Placement> place(const cluster::Pod& pod);

  // To be called after a pod bound to or left node `node`.
  void node_changed(int node);

 private:
  // What place's choice depends on besides the node: QoS, topology requirement, request.
  using ShapeKey = std::tuple<cluster::Qos, cluster::TopologyRequirement, int, int, std::int64_t>;
  // A node's position in place's order: (affinity, -score, node).
  using Rank = std::tuple<cluster::Affinity, int, int>;
  struct Shape {
    cluster::Pod pod;                       // the first pod of this shape, to rank nodes with
    std::set<Rank> ranked;                  // the nodes where it fits acceptably, best first
    std::vector<std::optional<Rank>> rank;  // per node: its entry in `ranked`, if any
  };

  void rerank(Shape& shape, int node) const;

  const cluster::ClusterState& state_;
  std::map<ShapeKey, Shape> shapes_;
};

}  // namespace tessera::sim::detail
