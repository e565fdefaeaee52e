// NodeState's take/release and ClusterState's bind/evict/update_topology, node_json.

#include "tessera/cluster/state/cluster_state.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <utility>

#include "support/cluster_builders.hpp"

namespace tessera::cluster {
namespace {

using test::assignment;
using test::kGiB;

TEST(NodeState, StartsAllFreeAndCountsCoresPerNuma) {
  test::ServerSpec spec;
  spec.group_cores = {8, 4, 2};
  NodeState n("n", test::server(spec));
  ASSERT_EQ(n.free_per_numa().size(), 2u);
  for (const NumaFree& f : n.free_per_numa()) {
    EXPECT_EQ(f.gpus, 4);
    EXPECT_EQ(f.core_groups, 3);
    EXPECT_EQ(f.cores, 14);
    EXPECT_EQ(f.memory_bytes, 256 * kGiB);
  }
}

TEST(NodeState, TakeAndReleaseKeepFreeCounts) {
  test::ServerSpec spec;
  spec.group_cores = {8, 4};
  NodeState n("n", test::server(spec));
  // GPUs 4-5 and core group 2 (the 8-core one) are on NUMA node 1.
  ASSERT_TRUE(n.take(7, /*priority=*/0, assignment({4, 5}, {2}, 1, 10 * kGiB)));
  EXPECT_EQ(n.free_per_numa()[1].gpus, 2);
  EXPECT_EQ(n.free_per_numa()[1].cores, 4);
  EXPECT_EQ(n.free_per_numa()[1].core_groups, 1);
  EXPECT_EQ(n.free_per_numa()[1].memory_bytes, 246 * kGiB);
  EXPECT_EQ(n.free_per_numa()[0].gpus, 4);
  EXPECT_EQ(n.gpu_owner()[4], 7);
  EXPECT_EQ(n.core_group_owner()[2], 7);
  EXPECT_EQ(n.numa_memory_used()[1], 10 * kGiB);
  EXPECT_EQ(n.pods(), std::vector<int>{7});
  n.release(7, assignment({4, 5}, {2}, 1, 10 * kGiB));
  EXPECT_EQ(n.free_per_numa()[1].gpus, 4);
  EXPECT_EQ(n.free_per_numa()[1].cores, 12);
  EXPECT_EQ(n.free_per_numa()[1].memory_bytes, 256 * kGiB);
  EXPECT_TRUE(n.pods().empty());
}

// One socket, two NUMA nodes of one 4-core group each: NUMA 0 of `memory0` (nullopt: unknown)
// with `reserved` bytes kept by the kubelet, NUMA 1 of 64 GiB.
std::shared_ptr<const hw::HostTopology> two_numa(std::optional<std::int64_t> memory0,
                                                 std::int64_t reserved = 0) {
  hw::HostTopologyBuilder b("n", "test");
  const int s = b.add_socket(0);
  const int n0 = b.add_numa(s, 0, memory0);
  const int n1 = b.add_numa(s, 1, 64 * kGiB);
  b.add_core_group(n0, {0, 1, 2, 3}, 4);
  b.add_core_group(n1, {4, 5, 6, 7}, 4);
  if (reserved > 0) b.reserve(n0, {}, reserved);
  auto t = std::move(b).build();
  EXPECT_TRUE(t) << t.error().message();
  return std::make_shared<const hw::HostTopology>(std::move(*t));
}

TEST(NodeState, ReservedMemoryIsNotFree) {
  NodeState n("n", two_numa(64 * kGiB, 4 * kGiB));
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, 60 * kGiB);
  EXPECT_EQ(n.free_per_numa()[1].memory_bytes, 64 * kGiB);
  EXPECT_FALSE(n.take(1, /*priority=*/0, assignment({}, {}, 0, 61 * kGiB)));
  ASSERT_TRUE(n.take(1, /*priority=*/0, assignment({}, {}, 0, 60 * kGiB)));
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, 0);
}

TEST(NodeState, UnknownMemoryIsUnlimitedAndStaysSo) {
  NodeState n("n", two_numa(std::nullopt, 4 * kGiB));
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, kUnlimitedMemory);
  ASSERT_TRUE(n.take(1, /*priority=*/0, assignment({}, {0}, 0, 1024 * kGiB)));
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, kUnlimitedMemory);
  EXPECT_EQ(n.numa_memory_used()[0], 1024 * kGiB);
  // What is held is still counted, so the sum of holdings cannot pass int64's range.
  const auto refused = n.take(2, /*priority=*/0, assignment({}, {}, 0, kUnlimitedMemory - kGiB));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("passes 2^63"), std::string::npos)
      << refused.error().message();
  n.release(1, assignment({}, {0}, 0, 1024 * kGiB));
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, kUnlimitedMemory);
  EXPECT_EQ(n.numa_memory_used()[0], 0);
}

TEST(NumaFree, SumsSaturateAtUnlimitedMemory) {
  NumaFree sum;
  sum += NumaFree{.gpus = 1, .core_groups = 2, .memory_bytes = kUnlimitedMemory, .cores = 8};
  sum += NumaFree{.gpus = 2, .core_groups = 1, .memory_bytes = 64 * kGiB, .cores = 4};
  EXPECT_EQ(sum.memory_bytes, kUnlimitedMemory);
  EXPECT_EQ(sum.gpus, 3);
  EXPECT_EQ(sum.core_groups, 3);
  EXPECT_EQ(sum.cores, 12);
  const auto capacity = capacity_per_numa(*two_numa(std::nullopt));
  EXPECT_EQ(capacity[0].memory_bytes, kUnlimitedMemory);
  EXPECT_EQ(capacity[1].memory_bytes, 64 * kGiB);
}

TEST(NodeState, TakeRefusesWithoutChangingAnything) {
  NodeState n("n", test::server({}));
  ASSERT_TRUE(n.take(1, /*priority=*/0, assignment({0}, {0})));
  const auto before = n.free_per_numa();
  const auto held = n.take(2, /*priority=*/0, assignment({1, 0}));
  ASSERT_FALSE(held);
  EXPECT_EQ(held.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(held.error().message().find("GPU 0: held by pod 1"), std::string::npos)
      << held.error().message();
  EXPECT_FALSE(n.take(2, /*priority=*/0, assignment({9})));
  EXPECT_FALSE(n.take(2, /*priority=*/0, assignment({2, 2})));
  EXPECT_FALSE(n.take(2, /*priority=*/0, assignment({}, {0})));
  EXPECT_FALSE(n.take(2, /*priority=*/0, assignment({}, {99})));
  EXPECT_FALSE(n.take(2, /*priority=*/0, assignment({}, {}, 0, 300 * kGiB)));
  EXPECT_FALSE(n.take(2, /*priority=*/0, assignment({}, {}, 5, kGiB)));
  EXPECT_EQ(n.gpu_owner()[1], -1);
  EXPECT_EQ(n.free_per_numa()[0].gpus, before[0].gpus);
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, before[0].memory_bytes);
  EXPECT_EQ(n.pods(), std::vector<int>{1});
}

TEST(NodeState, ReleaseReturnsOnlyWhatThePodHolds) {
  NodeState n("n", test::server({}));
  ASSERT_TRUE(n.take(1, /*priority=*/0, assignment({0}, {0}, 0, kGiB)));
  n.release(2, assignment({0}, {0}));  // pod 2 holds neither
  EXPECT_EQ(n.gpu_owner()[0], 1);
  EXPECT_EQ(n.core_group_owner()[0], 1);
  // Memory is counted per NUMA node, not per pod: a release never frees more than is used.
  n.release(1, assignment({0}, {0}, 0, 5 * kGiB));
  EXPECT_EQ(n.numa_memory_used()[0], 0);
  EXPECT_EQ(n.free_per_numa()[0].memory_bytes, 256 * kGiB);
  EXPECT_EQ(n.gpu_owner()[0], -1);
}

TEST(NodeState, HoldingsPerPodAndNumaNode) {
  NodeState n("n", test::server({}));
  // Pod 3 spans both NUMA nodes: GPUs 0 (NUMA 0) and 4 (NUMA 1), group 0 (NUMA 0), 2 GiB on 1.
  ASSERT_TRUE(n.take(3, /*priority=*/0, assignment({0, 4}, {0}, 1, 2 * kGiB)));
  ASSERT_TRUE(n.take(5, /*priority=*/0, assignment({1})));
  ASSERT_EQ(n.holdings().size(), 3u);
  EXPECT_EQ(n.holdings()[0].pod, 3);
  EXPECT_EQ(n.holdings()[0].numa, 0);
  EXPECT_EQ(n.holdings()[0].amount.gpus, 1);
  EXPECT_EQ(n.holdings()[0].amount.cores, 4);
  EXPECT_EQ(n.holdings()[1].pod, 3);
  EXPECT_EQ(n.holdings()[1].numa, 1);
  EXPECT_EQ(n.holdings()[1].amount.memory_bytes, 2 * kGiB);
  EXPECT_EQ(n.holdings()[2].pod, 5);
  // Giving back part of pod 3 keeps what it still holds.
  n.release(3, assignment({4}, {}, 1, 2 * kGiB));
  ASSERT_EQ(n.holdings().size(), 2u);
  EXPECT_EQ(n.holdings()[0].pod, 3);
  EXPECT_EQ(n.holdings()[0].numa, 0);
  EXPECT_EQ(n.pods(), (std::vector<int>{3, 5}));
  n.release(3, assignment({0}, {0}));
  ASSERT_EQ(n.holdings().size(), 1u);
  EXPECT_EQ(n.pods(), std::vector<int>{5});
}

TEST(AffinityOf, WidestSpreadOfGpusGroupsAndMemory) {
  test::ServerSpec spec;
  spec.numa_per_socket = 2;
  spec.gpus_per_numa = 2;
  const auto t = test::server(spec);
  // NUMA nodes 0,1 on socket 0; 2,3 on socket 1; GPUs 2j, 2j+1 and groups 4j..4j+3 on NUMA j.
  EXPECT_EQ(affinity_of(*t, assignment({0, 1}, {0}, 0, kGiB)), Affinity::kSameNuma);
  EXPECT_EQ(affinity_of(*t, assignment({0, 1}, {4}, 0, kGiB)), Affinity::kSameSocket);
  EXPECT_EQ(affinity_of(*t, assignment({0}, {0}, 1, kGiB)), Affinity::kSameSocket);
  EXPECT_EQ(affinity_of(*t, assignment({0}, {0}, 2, kGiB)), Affinity::kCrossSocket);
  EXPECT_EQ(affinity_of(*t, assignment({0, 4})), Affinity::kCrossSocket);
  EXPECT_EQ(affinity_of(*t, assignment({42})), Affinity::kCrossSocket);
}

TEST(ClusterState, AddNodeRefusesDuplicatesAndNull) {
  ClusterState s;
  ASSERT_TRUE(s.add_node("a", test::server({})));
  const auto dup = s.add_node("a", test::server({}));
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("'a' is already"), std::string::npos);
  EXPECT_FALSE(s.add_node("b", nullptr));
  EXPECT_EQ(s.find_node("a"), 0);
  EXPECT_EQ(s.find_node("b"), std::nullopt);
}

TEST(ClusterState, BindEvictAndFind) {
  ClusterState s = test::cluster_of(2, {});
  const auto p = s.bind(test::pod("ns/a", 5, 2), 1, assignment({4, 5}, {4}, 1, kGiB));
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(s.find_pod("ns/a"), *p);
  EXPECT_EQ(s.pod(*p).node, 1);
  EXPECT_EQ(s.pod(*p).assignment.affinity, Affinity::kSameNuma);
  EXPECT_EQ(s.node(1).gpu_owner()[4], *p);
  // Same name again, a held GPU, a node that does not exist, an invalid pod.
  EXPECT_FALSE(s.bind(test::pod("ns/a", 5, 1), 0, assignment({0})));
  EXPECT_FALSE(s.bind(test::pod("ns/b", 5, 1), 1, assignment({5})));
  EXPECT_FALSE(s.bind(test::pod("ns/b", 5, 1), 2, assignment({0})));
  EXPECT_FALSE(s.bind(test::pod("", 5, 1), 0, assignment({0})));
  EXPECT_FALSE(s.find_pod("ns/b"));
  EXPECT_EQ(s.priority(*p), 5);
  EXPECT_EQ(s.lowest_bound_priority(), 5);
  s.evict(*p);
  EXPECT_EQ(s.lowest_bound_priority(), std::nullopt);
  EXPECT_EQ(s.pod(*p).node, -1);
  EXPECT_FALSE(s.find_pod("ns/a"));
  EXPECT_EQ(s.node(1).gpu_owner()[4], -1);
  EXPECT_EQ(s.node(1).free_per_numa()[1].memory_bytes, 256 * kGiB);
  s.evict(*p);  // no-op
  s.evict(99);  // no-op
  // The name can be bound again once evicted.
  EXPECT_TRUE(s.bind(test::pod("ns/a", 5, 1), 0, assignment({0})));
}

// The nodes by the lowest priority they hold follow binds and evictions; a node without pods
// leaves the order.
TEST(ClusterState, NodesByLowestPriorityFollowBindsAndEvictions) {
  using Order = std::set<std::pair<std::int32_t, int>>;
  ClusterState s = test::cluster_of(3, {});
  EXPECT_EQ(s.nodes_by_lowest_priority(), Order{});
  const auto a = s.bind(test::pod("a", 5, 1), 1, assignment({0}));
  const auto b = s.bind(test::pod("b", 2, 1), 1, assignment({1}));
  const auto c = s.bind(test::pod("c", 7, 1), 2, assignment({0}));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(s.nodes_by_lowest_priority(), (Order{{2, 1}, {7, 2}}));
  s.evict(*b);
  EXPECT_EQ(s.nodes_by_lowest_priority(), (Order{{5, 1}, {7, 2}}));
  s.evict(*c);
  EXPECT_EQ(s.nodes_by_lowest_priority(), (Order{{5, 1}}));
  ASSERT_TRUE(s.update_topology(1, s.node(1).topology_ptr()));
  EXPECT_EQ(s.nodes_by_lowest_priority(), (Order{{5, 1}}));
  s.evict(*a);
  EXPECT_EQ(s.nodes_by_lowest_priority(), Order{});
}

TEST(ClusterState, BindRecordsTheAffinityTheAssignmentReaches) {
  ClusterState s = test::cluster_of(1, {});
  Assignment a = assignment({0, 4});
  a.affinity = Affinity::kSameNuma;  // wrong on purpose
  const auto p = s.bind(test::pod("x", 1, 2), 0, a);
  ASSERT_TRUE(p);
  EXPECT_EQ(s.pod(*p).assignment.affinity, Affinity::kCrossSocket);
}

TEST(ClusterState, UpdateTopologyKeepsPodsThatStillFit) {
  ClusterState s = test::cluster_of(1, {});
  ASSERT_TRUE(s.bind(test::pod("x", 1, 1), 0, assignment({6}, {}, 1, 100 * kGiB)));
  test::ServerSpec bigger;
  bigger.memory_per_numa = 512 * kGiB;
  ASSERT_TRUE(s.update_topology(0, test::server(bigger)));
  EXPECT_EQ(s.node(0).free_per_numa()[1].memory_bytes, 412 * kGiB);
  EXPECT_EQ(s.node(0).gpu_owner()[6], 0);
  test::ServerSpec smaller;
  smaller.gpus_per_numa = 2;  // GPU 6 is gone
  const auto st = s.update_topology(0, test::server(smaller));
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("pod 'x'"), std::string::npos) << st.error().message();
  EXPECT_EQ(s.node(0).topology().gpus().size(), 8u);
  EXPECT_FALSE(s.update_topology(3, test::server(bigger)));
}

TEST(NodeJson, StatusUsedByAndMemory) {
  ClusterState s = test::cluster_of(1, {});
  ASSERT_TRUE(s.bind(test::pod("ns/a", 1, 1), 0, assignment({1}, {2}, 0, 3 * kGiB)));
  const auto j = node_json(s, 0);
  int allocated = 0;
  int free_gpus = 0;
  for (const auto& v : j.at("nodes")) {
    const std::string kind = v.at("kind");
    if (kind == "gpu" || kind == "core-group") {
      if (v.at("status") == "allocated") {
        ++allocated;
        EXPECT_EQ(v.at("used_by"), "ns/a");
      } else {
        EXPECT_TRUE(v.at("used_by").is_null());
        if (kind == "gpu") ++free_gpus;
      }
    }
    if (kind == "numa" && v.at("name") == "numa0") {
      EXPECT_EQ(v.at("memory_used_bytes"), 3 * kGiB);
      ASSERT_EQ(v.at("memory_used_by").size(), 1u);
      EXPECT_EQ(v.at("memory_used_by")[0].at("pod"), "ns/a");
    }
  }
  EXPECT_EQ(allocated, 2);
  EXPECT_EQ(free_gpus, 7);
}

}  // namespace
}  // namespace tessera::cluster
