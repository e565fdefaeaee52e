// A scenario scaled to another node count (`tessera cluster-sim --nodes`, the scaling benchmark).

#include <cmath>

#include "tessera/backends/sim/cluster/cluster_workload.hpp"

namespace tessera::sim {

namespace {

int scaled(int n, double factor) {
  return static_cast<int>(std::llround(n * factor));
}

}  // namespace

core::Result<ClusterScenario> scale_to_nodes(const ClusterScenario& scenario, int nodes) {
  const auto refuse = [&](std::string_view why) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "cannot scale scenario '{}' to {} nodes: {}", scenario.name, nodes, why);
  };
  if (nodes < 1 || nodes > 100'000) return refuse("the node count must be in [1, 100000]");
  if (scenario.trace) return refuse("it replays a trace, whose pods are what they are");
  int total = 0;
  for (const NodePool& pool : scenario.nodes) {
    if (!pool.openb_node_csv.empty()) return refuse("its nodes come from a node list");
    total += pool.count;
  }
  if (total == 0) return refuse("it has no nodes");
  const double factor = static_cast<double>(nodes) / total;
  ClusterScenario out = scenario;
  // Each pool in proportion; the last one takes what rounding leaves.
  int given = 0;
  for (std::size_t i = 0; i + 1 < out.nodes.size(); ++i) {
    out.nodes[i].count = std::max(1, scaled(out.nodes[i].count, factor));
    given += out.nodes[i].count;
  }
  out.nodes.back().count = nodes - given;
  if (out.nodes.back().count < 1) return refuse("too few nodes for one in every pool");
  for (ServiceSpec& s : out.services) {
    s.min_replicas = scaled(s.min_replicas, factor);
    s.max_replicas = std::max(s.min_replicas, scaled(s.max_replicas, factor));
    s.mean_load *= factor;
  }
  for (BatchSpec& b : out.batches) b.arrivals_per_hour *= factor;
  return out;
}

}  // namespace tessera::sim
