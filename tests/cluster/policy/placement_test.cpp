// best_assignment / best_affinity, filter_nodes, score_node, place on hand-built servers.

#include "tessera/cluster/policy/placement.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "support/cluster_builders.hpp"
#include "tessera/core/random.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::cluster {
namespace {

using test::assignment;
using test::kGiB;

using test::two_by_two;

Resources req(int gpus, int cpus = 0, std::int64_t memory = 0) {
  Resources r;
  r.gpus = gpus;
  r.cpus = cpus;
  r.memory_bytes = memory;
  return r;
}

TEST(BestAssignment, OneNumaNodeWhenItHoldsEverything) {
  NodeState n("n", test::server(two_by_two()));
  const auto a = best_assignment(n, req(2, 6, 10 * kGiB));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->affinity, Affinity::kSameNuma);
  EXPECT_EQ(a->gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(a->core_groups, (std::vector<int>{0, 1}));  // 6 cores: two 4-core groups
  ASSERT_EQ(a->memory.size(), 1u);
  EXPECT_EQ(a->memory[0].numa, 0);
  EXPECT_EQ(a->memory[0].bytes, 10 * kGiB);
  EXPECT_TRUE(n.take(1, /*priority=*/0, *a));
}

TEST(BestAssignment, SocketThenAcrossSockets) {
  NodeState n("n", test::server(two_by_two()));
  const auto four = best_assignment(n, req(4));
  ASSERT_TRUE(four);
  EXPECT_EQ(four->affinity, Affinity::kSameSocket);
  EXPECT_EQ(four->gpus, (std::vector<int>{0, 1, 2, 3}));
  const auto six = best_assignment(n, req(6));
  ASSERT_TRUE(six);
  EXPECT_EQ(six->affinity, Affinity::kCrossSocket);
  EXPECT_EQ(six->gpus.size(), 6u);
  EXPECT_FALSE(best_assignment(n, req(9)));
  // Memory alone can spread a pod: 200 GiB is more than one NUMA node's 128.
  const auto mem = best_assignment(n, req(1, 0, 200 * kGiB));
  ASSERT_TRUE(mem);
  EXPECT_EQ(mem->affinity, Affinity::kSameSocket);
  EXPECT_FALSE(best_assignment(n, req(0, 0, 600 * kGiB)));
}

TEST(BestAssignment, TightestFitKeepsLargeHolesWhole) {
  NodeState n("n", test::server(two_by_two()));
  ASSERT_TRUE(n.take(0, /*priority=*/0, assignment({2})));  // NUMA 1 has one GPU left
  const auto a = best_assignment(n, req(1));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->gpus, std::vector<int>{3});
  // Socket level: socket 1 (NUMA 2, 3: 4 GPUs) vs socket 0 (3 GPUs): 3 GPUs go to socket 0.
  ASSERT_TRUE(n.take(1, /*priority=*/0, assignment({4})));
  ASSERT_TRUE(n.take(2, /*priority=*/0, assignment({6})));
  const auto three = best_assignment(n, req(3));
  ASSERT_TRUE(three);
  EXPECT_EQ(three->affinity, Affinity::kSameSocket);
  EXPECT_EQ(three->gpus, (std::vector<int>{0, 1, 3}));
}

TEST(BestAssignment, LinkedGpusStayTogether) {
  test::ServerSpec spec;
  spec.switch_pairs = true;  // NUMA 0: GPUs 0-1 and 2-3 behind one PCIe switch each
  {
    NodeState n("n", test::server(spec));
    ASSERT_TRUE(n.take(0, /*priority=*/0, assignment({1})));
    // Lowest free indices would be 0 and 2, on two switches; the free pair 2-3 is taken instead.
    const auto two = best_assignment(n, req(2));
    ASSERT_TRUE(two);
    EXPECT_EQ(two->gpus, (std::vector<int>{2, 3}));
  }
  {
    NodeState n("n", test::server(spec));
    ASSERT_TRUE(n.take(0, /*priority=*/0, assignment({2})));
    // One GPU: the lone GPU 3 (its partner is taken), keeping the pair 0-1 whole.
    const auto one = best_assignment(n, req(1));
    ASSERT_TRUE(one);
    EXPECT_EQ(one->gpus, std::vector<int>{3});
    // Three: the pair first, then the lone one.
    const auto three = best_assignment(n, req(3));
    ASSERT_TRUE(three);
    EXPECT_EQ(three->gpus, (std::vector<int>{0, 1, 3}));
  }
}

TEST(BestAssignment, FewestCoreGroupsWhenGroupsDifferInSize) {
  test::ServerSpec spec;
  spec.group_cores = {8, 4, 2, 2};  // per NUMA node: groups 0-3 on NUMA 0
  NodeState n("n", test::server(spec));
  const auto groups_for = [&](int cores) {
    const auto a = best_assignment(n, req(0, cores));
    EXPECT_TRUE(a);
    return a ? a->core_groups : std::vector<int>{};
  };
  EXPECT_EQ(groups_for(2), std::vector<int>{2});           // the smallest group that covers
  EXPECT_EQ(groups_for(3), std::vector<int>{1});           // 4 cores
  EXPECT_EQ(groups_for(6), std::vector<int>{0});           // one 8-core group, not 4 + 2
  EXPECT_EQ(groups_for(10), (std::vector<int>{0, 2}));     // 8 + 2
  EXPECT_EQ(groups_for(13), (std::vector<int>{0, 1, 2}));  // 8 + 4 + 2
  const auto across = best_assignment(n, req(0, 20));
  ASSERT_TRUE(across);
  EXPECT_EQ(across->affinity, Affinity::kCrossSocket);
}

// best_affinity (counts only) and best_assignment (what is taken) agree, and the assignment is
// takeable and holds the request, over random states of a 2x2 server.
TEST(BestAssignment, AgreesWithBestAffinityOnRandomStates) {
  core::RandomStream rng = core::RandomStreams(11).stream("placement/random-states");
  test::ServerSpec spec = two_by_two();
  spec.group_cores = {6, 4, 2};
  for (int trial = 0; trial < 300; ++trial) {
    NodeState n("n", test::server(spec));
    int pod = 0;
    for (int k = 0; k < 6; ++k) {
      const Resources r = req(static_cast<int>(rng.below(3)), static_cast<int>(rng.below(9)),
                              static_cast<std::int64_t>(rng.below(60)) * kGiB);
      if (r.gpus + r.cpus + r.memory_bytes == 0) continue;
      if (auto a = best_assignment(n, r)) {
        ASSERT_TRUE(n.take(pod++, /*priority=*/0, *a));
      }
    }
    const Resources r = req(static_cast<int>(rng.below(6)), static_cast<int>(rng.below(30)),
                            static_cast<std::int64_t>(rng.below(300)) * kGiB);
    const auto level = best_affinity(n.topology(), n.free_per_numa(), r);
    const auto a = best_assignment(n, r);
    ASSERT_EQ(level.has_value(), a.has_value()) << "trial " << trial;
    if (!a) continue;
    EXPECT_EQ(*level, a->affinity) << "trial " << trial;
    EXPECT_EQ(static_cast<int>(a->gpus.size()), r.gpus);
    int cores = 0;
    for (int g : a->core_groups) cores += n.topology().core_group(g).cores;
    EXPECT_GE(cores, r.cpus);
    std::int64_t bytes = 0;
    for (const auto& m : a->memory) bytes += m.bytes;
    EXPECT_EQ(bytes, r.memory_bytes);
    EXPECT_TRUE(n.take(pod, /*priority=*/0, *a)) << "trial " << trial;
  }
}

// The DGX A100-like preset: 2 sockets x 4 NUMA nodes (NPS4), GPUs on every second NUMA node.
TEST(BestAssignment, DgxA100NumaNodesWithoutGpus) {
  auto topo = hw::preset("a100-2s4n", "dgx");
  ASSERT_TRUE(topo) << topo.error().message();
  NodeState n("dgx", std::make_shared<const hw::HostTopology>(std::move(*topo)));
  const int cores = n.free_per_numa()[1].cores;
  ASSERT_EQ(n.free_per_numa()[1].gpus, 2);
  ASSERT_EQ(n.free_per_numa()[0].gpus, 0);
  const auto fits = best_assignment(n, req(2, cores, 64 * kGiB));
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->affinity, Affinity::kSameNuma);
  // More cores than the GPUs' NUMA node has: two NUMA nodes of socket 0, the GPUs' one first.
  const auto spread = best_assignment(n, req(2, cores + 4));
  ASSERT_TRUE(spread);
  EXPECT_EQ(spread->affinity, Affinity::kSameSocket);
  for (int g : spread->gpus) EXPECT_EQ(n.topology().gpu(g).numa, 1);
  int on_gpu_numa = 0;
  for (int g : spread->core_groups) {
    EXPECT_LE(n.topology().core_group(g).numa, 1);
    if (n.topology().core_group(g).numa == 1) on_gpu_numa += n.topology().core_group(g).cores;
  }
  EXPECT_EQ(on_gpu_numa, cores);
  // Four GPUs: the two GPU NUMA nodes of one socket; five: across sockets.
  EXPECT_EQ(best_affinity(n.topology(), n.free_per_numa(), req(4)), Affinity::kSameSocket);
  EXPECT_EQ(best_affinity(n.topology(), n.free_per_numa(), req(5)), Affinity::kCrossSocket);
}

TEST(Acceptable, GuaranteedNeedsItsRequirementBestEffortTakesAnything) {
  const Pod g = test::pod("g", 1, 2).numa().guaranteed();
  const Pod s = test::pod("s", 1, 2).socket().guaranteed();
  const Pod b = test::pod("b", 1, 2).numa();
  EXPECT_TRUE(acceptable(g, Affinity::kSameNuma));
  EXPECT_FALSE(acceptable(g, Affinity::kSameSocket));
  EXPECT_TRUE(acceptable(s, Affinity::kSameSocket));
  EXPECT_FALSE(acceptable(s, Affinity::kCrossSocket));
  EXPECT_TRUE(acceptable(b, Affinity::kCrossSocket));
}

TEST(FilterNodes, ReasonsNameTheShortfall) {
  ClusterState s = test::cluster_of(3, two_by_two());
  // node1: one GPU taken on each NUMA node; node2: all but two GPUs taken.
  for (int g : {0, 2, 4, 6}) {
    ASSERT_TRUE(s.bind(test::pod(fmt::format("a{}", g), 1, 1), 1, assignment({g})));
  }
  ASSERT_TRUE(s.bind(test::pod("big", 1, 6), 2, assignment({0, 1, 2, 3, 4, 5})));
  const Pod pod = test::pod("svc", 10, 2).cores(4).numa().guaranteed();
  const auto v = filter_nodes(s, pod);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0].fits);
  EXPECT_EQ(v[0].affinity, Affinity::kSameNuma);
  EXPECT_FALSE(v[1].fits);
  EXPECT_NE(v[1].reason.find("within one NUMA node"), std::string::npos) << v[1].reason;
  EXPECT_NE(v[1].reason.find("the best here is same-socket"), std::string::npos) << v[1].reason;
  EXPECT_NE(v[1].reason.find("numa0 1 GPUs"), std::string::npos) << v[1].reason;
  EXPECT_TRUE(v[2].fits);  // GPUs 6, 7 are both on NUMA node 3
  const Pod four = test::pod("four", 10, 4);
  const auto w = filter_nodes(s, four, std::vector<int>{2, 7});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_FALSE(w[0].fits);
  EXPECT_EQ(w[0].reason, "needs 4 GPUs, 2 free");
  EXPECT_NE(w[1].reason.find("does not exist"), std::string::npos);
  // A best-effort pod with the same requirement fits node1 (a preference, not a filter).
  const Pod be = test::pod("be", 10, 2).numa();
  EXPECT_TRUE(filter_nodes(s, be)[1].fits);
}

TEST(ScoreNode, AffinityFirstThenTighterFit) {
  ClusterState s = test::cluster_of(4, two_by_two());
  // node0 empty; node1: NUMA 0 has exactly 1 GPU left (tight); node2: each NUMA node has 1 GPU
  // (2 GPUs only within a socket); node3: only GPUs 0 and 7 free (across sockets).
  ASSERT_TRUE(s.bind(test::pod("a", 1, 1), 1, assignment({0})));
  for (int g : {0, 2, 4, 6}) {
    ASSERT_TRUE(s.bind(test::pod(fmt::format("b{}", g), 1, 1), 2, assignment({g})));
  }
  ASSERT_TRUE(s.bind(test::pod("c", 1, 6), 3, assignment({1, 2, 3, 4, 5, 6})));
  const Pod one = test::pod("one", 5, 1);
  const Pod two = test::pod("two", 5, 2);
  EXPECT_GT(score_node(s, one, 1), score_node(s, one, 0));  // tight fit on NUMA 0
  EXPECT_EQ(score_node(s, one, 1), 10);
  EXPECT_GT(score_node(s, two, 0), score_node(s, two, 2));  // same NUMA over same socket
  EXPECT_GT(score_node(s, two, 2), score_node(s, two, 3));  // same socket over across
  EXPECT_EQ(score_node(s, test::pod("nine", 5, 9), 0), 0);  // does not fit
  EXPECT_EQ(score_node(s, test::pod("g", 5, 2).numa().guaranteed(), 2), 0);  // not acceptable
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(score_node(s, two, i), 0);
    EXPECT_LE(score_node(s, two, i), 10);
  }
}

// ND A100 v4's NCCL topology names no memory: a pod that requests memory is placed by its GPUs and
// cores alone, unless the memory is given (tessera's --numa-memory).
TEST(UnknownMemory, NcclNodeTakesMemoryRequestsUnlessItsMemoryIsGiven) {
  const std::string path =
      std::string(TESSERA_SHARED_DATA_DIR) + "/topology/nccl_azure/ndv4-topo.xml";
  hw::TopologyOptions o;
  o.nccl_numa_per_socket = 2;
  auto unknown = hw::load_nccl_xml(path, o);
  ASSERT_TRUE(unknown) << unknown.error().message();
  ClusterState state;
  ASSERT_TRUE(state.add_node("ndv4", std::make_shared<const hw::HostTopology>(*unknown)));
  const Pod llm = test::pod("llm", 100, 2).cores(8).memory(512 * kGiB).numa().guaranteed();
  const auto verdicts = filter_nodes(state, llm);
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_TRUE(verdicts[0].fits) << verdicts[0].reason;
  const auto d = place(state, llm);
  ASSERT_EQ(d.status, DecisionStatus::kChosen) << d.reason;
  EXPECT_EQ(d.placement->assignment.affinity, Affinity::kSameNuma);
  ASSERT_EQ(d.placement->assignment.memory.size(), 1u);
  EXPECT_EQ(d.placement->assignment.memory[0].bytes, 512 * kGiB);
  EXPECT_GT(score_node(state, llm, 0), 0);
  // A request past what all NUMA nodes together could sum to does not overflow them.
  const Pod huge = test::pod("huge", 100, 8).memory(kUnlimitedMemory - 1);
  EXPECT_EQ(best_affinity(*unknown, state.node(0).free_per_numa(), huge.request),
            Affinity::kCrossSocket);

  o.numa_memory_bytes = 220 * kGiB;
  auto given = hw::load_nccl_xml(path, o);
  ASSERT_TRUE(given) << given.error().message();
  ClusterState sized;
  ASSERT_TRUE(sized.add_node("ndv4", std::make_shared<const hw::HostTopology>(*given)));
  const auto refused = filter_nodes(sized, llm);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_FALSE(refused[0].fits);
  EXPECT_NE(refused[0].reason.find("220.0 GiB"), std::string::npos) << refused[0].reason;
  EXPECT_EQ(place(sized, llm).status, DecisionStatus::kInfeasible);
  const Pod fits = test::pod("fits", 100, 2).cores(8).memory(200 * kGiB).numa().guaranteed();
  EXPECT_EQ(place(sized, fits).status, DecisionStatus::kChosen);
}

TEST(Place, BestAffinityThenScoreThenLowestIndex) {
  ClusterState s = test::cluster_of(3, two_by_two());
  // node0: 1 GPU per NUMA node free (socket level for 2 GPUs); node1, node2: empty.
  for (int g : {0, 2, 4, 6}) {
    ASSERT_TRUE(s.bind(test::pod(fmt::format("a{}", g), 1, 1), 0, assignment({g})));
  }
  ASSERT_TRUE(s.bind(test::pod("b", 1, 1), 2, assignment({0})));
  // 1 GPU: node0 and node2 have a tight NUMA node; node0 wins on index.
  const auto d1 = place(s, test::pod("p1", 5, 1));
  EXPECT_EQ(d1.status, DecisionStatus::kChosen);
  const auto& p1 = d1.placement;
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->node, 0);
  EXPECT_EQ(p1->assignment.affinity, Affinity::kSameNuma);
  // 2 GPUs: node0 only reaches same-socket; node1 and node2 reach one NUMA node and fill it (score
  // 10 both): node1 wins on index.
  const auto p2 = place(s, test::pod("p2", 5, 2)).placement;
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->node, 1);
  EXPECT_EQ(p2->assignment.gpus, (std::vector<int>{0, 1}));
  const auto p9 = place(s, test::pod("p9", 5, 9));
  EXPECT_EQ(p9.status, DecisionStatus::kInfeasible);
  EXPECT_FALSE(p9.placement);
  EXPECT_EQ(p9.reason, "none of the 3 nodes has room for pod 'p9' (9 GPUs) anywhere");
  // Guaranteed NUMA pod on a cluster of node0 only: nothing.
  ClusterState only = test::cluster_of(1, two_by_two());
  for (int g : {0, 2, 4, 6}) {
    ASSERT_TRUE(only.bind(test::pod(fmt::format("a{}", g), 1, 1), 0, assignment({g})));
  }
  const auto g = place(only, test::pod("g", 5, 2).numa().guaranteed());
  EXPECT_EQ(g.status, DecisionStatus::kInfeasible);
  EXPECT_EQ(g.reason, "none of the 1 nodes has room for pod 'g' (2 GPUs) within one NUMA node");
  const auto be = place(only, test::pod("be", 5, 2).numa()).placement;
  ASSERT_TRUE(be);
  EXPECT_EQ(be->assignment.affinity, Affinity::kSameSocket);
}

}  // namespace
}  // namespace tessera::cluster
