#include "tessera/backends/sim/cluster/internal/placement_index.hpp"

namespace tessera::sim::detail {

std::optional<cluster::Placement> PlacementIndex::place(const cluster::Pod& pod) {
  const ShapeKey key{pod.qos, pod.topology, pod.request.gpus, pod.request.cpus,
                     pod.request.memory_bytes};
  auto [it, added] = shapes_.try_emplace(key);
  Shape& shape = it->second;
  if (added) {
    shape.pod = pod;
    shape.rank.resize(state_.nodes().size());
    for (std::size_t i = 0; i < state_.nodes().size(); ++i) rerank(shape, static_cast<int>(i));
  }
  if (shape.ranked.empty()) return std::nullopt;
  const int node = std::get<2>(*shape.ranked.begin());
  auto assignment = cluster::best_assignment(state_.node(node), pod.request);
  if (!assignment) return std::nullopt;  // as place: the node's affinity has no assignment
  return cluster::Placement{.node = node, .assignment = std::move(*assignment)};
}

void PlacementIndex::node_changed(int node) {
  for (auto& [key, shape] : shapes_) rerank(shape, node);
}

void PlacementIndex::rerank(Shape& shape, int node) const {
  auto& entry = shape.rank[static_cast<std::size_t>(node)];
  if (entry) shape.ranked.erase(*entry);
  entry.reset();
  const cluster::NodeState& n = state_.node(node);
  const auto affinity = cluster::best_affinity(n.topology(), n.free_per_numa(), shape.pod.request);
  if (!affinity || !cluster::acceptable(shape.pod, *affinity)) return;
  entry = Rank{*affinity, -cluster::score_node(state_, shape.pod, node), node};
  shape.ranked.insert(*entry);
}

}  // namespace tessera::sim::detail
