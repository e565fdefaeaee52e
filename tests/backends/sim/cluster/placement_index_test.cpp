// The simulator's placement index: the same decision as cluster::place after every bind and
// eviction, on a cluster of mixed servers.

#include "tessera/backends/sim/cluster/internal/placement_index.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tessera/cluster/policy/placement.hpp"
#include "tessera/core/random.hpp"
#include "tessera/hw/topology/presets.hpp"

namespace tessera::sim::detail {
namespace {

using cluster::Qos;
using cluster::TopologyRequirement;

constexpr std::int64_t kGiB = std::int64_t{1024} * 1024 * 1024;

cluster::Pod pod(Qos qos, TopologyRequirement topology, int gpus, int cpus, int gib) {
  cluster::Pod p;
  p.qos = qos;
  p.topology = topology;
  p.request = {.gpus = gpus, .cpus = cpus, .memory_bytes = gib * kGiB};
  return p;
}

cluster::ClusterState mixed_cluster() {
  cluster::ClusterState state;
  int i = 0;
  for (const char* preset : {"rtx4090-2s", "rtx4090-2s2n", "a100-2s4n", "h100-2s"}) {
    auto topology = std::make_shared<const hw::HostTopology>(*hw::preset(preset, preset));
    for (int k = 0; k < 6; ++k) EXPECT_TRUE(state.add_node(fmt::format("n{}", i++), topology));
  }
  return state;
}

void expect_same(const std::optional<cluster::Placement>& got,
                 const cluster::PlacementDecision& want, const cluster::Pod& p) {
  ASSERT_EQ(got.has_value(), want.placement.has_value()) << p.name << ": " << want.reason;
  if (!got) return;
  EXPECT_EQ(got->node, want.placement->node) << p.name;
  EXPECT_EQ(got->assignment.gpus, want.placement->assignment.gpus) << p.name;
  EXPECT_EQ(got->assignment.core_groups, want.placement->assignment.core_groups) << p.name;
  EXPECT_EQ(got->assignment.affinity, want.placement->assignment.affinity) << p.name;
}

TEST(PlacementIndex, DecidesAsPlaceThroughBindsAndEvictions) {
  cluster::ClusterState state = mixed_cluster();
  PlacementIndex index(state);
  const std::vector<cluster::Pod> shapes = {
      pod(Qos::kGuaranteed, TopologyRequirement::kNuma, 1, 8, 32),
      pod(Qos::kGuaranteed, TopologyRequirement::kNuma, 2, 16, 64),
      pod(Qos::kGuaranteed, TopologyRequirement::kSocket, 4, 24, 128),
      pod(Qos::kBestEffort, TopologyRequirement::kNone, 3, 12, 64),
      pod(Qos::kBestEffort, TopologyRequirement::kSocket, 8, 32, 256),
      pod(Qos::kGuaranteed, TopologyRequirement::kNuma, 0, 6, 16),
  };
  core::RandomStream rng = core::RandomStreams(5).stream("placement-index");
  std::vector<int> bound;
  int placed = 0, refused = 0;
  for (int step = 0; step < 1500; ++step) {
    // Leave more often as the cluster fills, so it swings between empty and full.
    if (!bound.empty() && rng.uniform01() < 0.45) {
      const auto k = rng.below(bound.size());
      const int node = state.pod(bound[k]).node;
      state.evict(bound[k]);
      index.node_changed(node);
      bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    cluster::Pod p = shapes[rng.below(shapes.size())];
    p.name = fmt::format("p{}", step);
    const auto got = index.place(p);
    const auto want = cluster::place(state, p);
    expect_same(got, want, p);
    if (!got) {
      ++refused;
      continue;
    }
    auto b = state.bind(p, got->node, got->assignment);
    ASSERT_TRUE(b) << b.error().message();
    index.node_changed(got->node);
    bound.push_back(*b);
    ++placed;
  }
  // Both outcomes were exercised.
  EXPECT_GT(placed, 300);
  EXPECT_GT(refused, 50);
}

}  // namespace
}  // namespace tessera::sim::detail
