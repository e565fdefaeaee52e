#include "tessera/cluster/state/cluster_state.hpp"

#include "tessera/core/try.hpp"

namespace tessera::cluster {

namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

}  // namespace

core::Result<int> ClusterState::add_node(std::string name,
                                         std::shared_ptr<const hw::HostTopology> topology) {
  if (name.empty()) {
    return core::fail(core::Domain::kCluster, core::Code::kInvalidArgument, "a node needs a name");
  }
  if (!topology) {
    return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument,
                       "node '{}': no topology given", name);
  }
  if (node_index_.contains(name)) {
    return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument,
                       "node '{}' is already in the cluster", name);
  }
  const int index = static_cast<int>(nodes_.size());
  node_index_.emplace(name, index);
  nodes_.emplace_back(std::move(name), std::move(topology));
  lowest_.emplace_back();
  return index;
}

core::Status ClusterState::update_topology(int node,
                                           std::shared_ptr<const hw::HostTopology> topology) {
  if (node < 0 || at(node) >= nodes_.size()) {
    return core::failf(core::Domain::kCluster, core::Code::kNotFound,
                       "node {} does not exist ({} nodes)", node, nodes_.size());
  }
  const NodeState& old = nodes_[at(node)];
  if (!topology) {
    return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument,
                       "node '{}': no topology given", old.name());
  }
  // Rebuild the allocation on the new topology pod by pod; the first pod that no longer fits
  // fails the update and the old state stays.
  NodeState fresh(old.name(), std::move(topology));
  for (int p : old.pods()) {
    const BoundPod& bp = pods_[at(p)];
    if (auto st = fresh.take(p, bp.pod.priority, bp.assignment); !st) {
      return core::failf(core::Domain::kCluster, core::Code::kFailedPrecondition,
                         "node '{}': the new topology no longer holds pod '{}': {}", old.name(),
                         bp.pod.name, st.error().message());
    }
  }
  nodes_[at(node)] = std::move(fresh);
  reindex_lowest(node);
  return {};
}

std::optional<int> ClusterState::find_node(std::string_view name) const {
  const auto it = node_index_.find(std::string(name));
  if (it == node_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> ClusterState::find_pod(std::string_view name) const {
  const auto it = bound_index_.find(std::string(name));
  if (it == bound_index_.end()) return std::nullopt;
  return it->second;
}

core::Result<int> ClusterState::bind(Pod pod, int node, const Assignment& assignment) {
  TESSERA_TRY(validate(pod));
  if (node < 0 || at(node) >= nodes_.size()) {
    return core::failf(core::Domain::kCluster, core::Code::kNotFound,
                       "pod '{}': node {} does not exist ({} nodes)", pod.name, node,
                       nodes_.size());
  }
  if (bound_index_.contains(pod.name)) {
    return core::failf(core::Domain::kCluster, core::Code::kFailedPrecondition,
                       "pod '{}' is already bound (to node '{}')", pod.name,
                       nodes_[at(pods_[at(bound_index_.at(pod.name))].node)].name());
  }
  const int index = static_cast<int>(pods_.size());
  NodeState& n = nodes_[at(node)];
  if (auto st = n.take(index, pod.priority, assignment); !st) {
    return std::unexpected(st.error().with_context(fmt::format("binding pod '{}'", pod.name)));
  }
  BoundPod bp;
  bp.pod = std::move(pod);
  bp.node = node;
  bp.assignment = assignment;
  // What the assignment really achieves, whatever the caller wrote there.
  bp.assignment.affinity = affinity_of(n.topology(), assignment);
  bound_index_.emplace(bp.pod.name, index);
  priorities_.push_back(bp.pod.priority);
  ++bound_priorities_[bp.pod.priority];
  pods_.push_back(std::move(bp));
  reindex_lowest(node);
  return index;
}

void ClusterState::evict(int index) {
  if (index < 0 || at(index) >= pods_.size()) return;
  BoundPod& bp = pods_[at(index)];
  if (bp.node < 0) return;
  nodes_[at(bp.node)].release(index, bp.assignment);
  reindex_lowest(bp.node);
  bound_index_.erase(bp.pod.name);
  bp.node = -1;
  const auto it = bound_priorities_.find(bp.pod.priority);
  if (--it->second == 0) bound_priorities_.erase(it);
}

void ClusterState::reindex_lowest(int node) {
  std::optional<std::int32_t> lowest;
  for (const Holding& h : nodes_[at(node)].holdings()) {
    if (!lowest || h.priority < *lowest) lowest = h.priority;
  }
  std::optional<std::int32_t>& indexed = lowest_[at(node)];
  if (lowest == indexed) return;
  if (indexed) by_lowest_.erase({*indexed, node});
  if (lowest) by_lowest_.emplace(*lowest, node);
  indexed = lowest;
}

std::optional<std::int32_t> ClusterState::lowest_bound_priority() const {
  if (bound_priorities_.empty()) return std::nullopt;
  return bound_priorities_.begin()->first;
}

}  // namespace tessera::cluster
