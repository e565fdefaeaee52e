// preempt / node_candidates: incremental finds a minimal set (checked against a brute force over
// random small clusters), exhaustive finds the best S, default-k8s follows kube-scheduler's order
// and is blind to topology, QoS, alpha's extremes, determinism.

#include "tessera/cluster/policy/preemption.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <tuple>

#include "support/cluster_builders.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/core/random.hpp"

namespace tessera::cluster {
namespace {

using test::assignment;
using test::kGiB;

using test::two_by_two;

int bind(ClusterState& s, const Pod& p, int node, std::vector<int> gpus) {
  const auto r = s.bind(p, node, assignment(std::move(gpus)));
  EXPECT_TRUE(r) << r.error().message();
  return r ? *r : -1;
}

// A saturated-ish random cluster: pods of 1, 2 or 4 GPUs with some cores and memory and assorted
// priorities placed with place() until several in a row do not fit.
ClusterState random_cluster(core::RandomStream& rng, int nodes) {
  ClusterState s = test::cluster_of(nodes, two_by_two());
  const int sizes[] = {1, 1, 2, 2, 4};
  const std::int32_t priorities[] = {1, 2, 3, 5, 8};
  int misses = 0;
  for (int k = 0; misses < 4; ++k) {
    Pod p = test::pod(fmt::format("p{}", k), priorities[rng.below(5)], sizes[rng.below(5)])
                .cores(static_cast<int>(rng.below(9)))
                .memory(static_cast<std::int64_t>(rng.below(40)) * kGiB)
                .start(k);
    const auto where = place(s, p).placement;
    if (!where) {
      ++misses;
      continue;
    }
    EXPECT_TRUE(s.bind(p, where->node, where->assignment));
  }
  return s;
}

Pod random_preemptor(core::RandomStream& rng) {
  auto b = test::pod("preemptor", static_cast<std::int32_t>(4 + rng.below(7)),
                     static_cast<int>(1 + rng.below(4)))
               .cores(static_cast<int>(rng.below(9)))
               .memory(static_cast<std::int64_t>(rng.below(60)) * kGiB);
  const auto topo = rng.below(3);
  if (topo == 0) b.numa();
  if (topo == 1) b.socket();
  if (rng.below(2) == 0) b.guaranteed();
  return b;
}

// (meets the requirement, S) of one set, computed independently of preemption.cpp: the victims
// released from a copy of the node and the placement found by best_assignment.
struct Brute {
  std::size_t min_size = SIZE_MAX;
  std::tuple<bool, double> best_at_min{false, -1};
  std::tuple<bool, double> best_all{false, -1};
  std::size_t best_all_min_size = SIZE_MAX;
};

Brute brute_force(const ClusterState& s, const Pod& pod, const PreemptionConfig& c) {
  std::int32_t p_min = pod.priority;
  for (const NodeState& n : s.nodes()) {
    for (int p : n.pods()) p_min = std::min(p_min, s.pod(p).pod.priority);
  }
  Brute b;
  for (std::size_t i = 0; i < s.nodes().size(); ++i) {
    std::vector<int> victims;
    for (int p : s.nodes()[i].pods()) {
      if (s.pod(p).pod.priority < pod.priority) victims.push_back(p);
    }
    for (std::uint32_t mask = 0; mask < (1u << victims.size()); ++mask) {
      const auto size = static_cast<std::size_t>(std::popcount(mask));
      if (size > static_cast<std::size_t>(c.max_victims)) continue;
      NodeState n = s.nodes()[i];
      std::int64_t shifted = 0;
      for (std::size_t k = 0; k < victims.size(); ++k) {
        if (!(mask & (1u << k))) continue;
        n.release(victims[k], s.pod(victims[k]).assignment);
        shifted += s.pod(victims[k]).pod.priority - p_min + 1;
      }
      const auto a = best_assignment(n, pod.request);
      if (!a || !acceptable(pod, a->affinity)) continue;
      const double p = shifted == 0 ? 1.0 : 1.0 / static_cast<double>(shifted);
      const std::tuple<bool, double> key{satisfies(a->affinity, pod.topology),
                                         c.alpha * p + (1 - c.alpha) * c.topology.of(a->affinity)};
      if (size < b.min_size) {
        b.min_size = size;
        b.best_at_min = key;
      } else if (size == b.min_size) {
        b.best_at_min = std::max(b.best_at_min, key);
      }
      if (key > b.best_all || (key == b.best_all && size < b.best_all_min_size)) {
        b.best_all = key;
        b.best_all_min_size = size;
      }
    }
  }
  return b;
}

std::tuple<bool, double> key_of(const Pod& pod, const PreemptionCandidate& c) {
  return {satisfies(c.affinity, pod.topology), c.score};
}

TEST(Preempt, IncrementalMinimalAndExhaustiveBestAgainstBruteForce) {
  core::RandomStream rng = core::RandomStreams(2024).stream("preemption/brute-force");
  PreemptionConfig config;
  config.max_victims = 4;
  int found = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const ClusterState s = random_cluster(rng, 3);
    const Pod pod = random_preemptor(rng);
    const Brute b = brute_force(s, pod, config);
    const auto inc = preempt(s, pod, PreemptionMethod::kIncremental, config);
    const auto exh = preempt(s, pod, PreemptionMethod::kExhaustive, config);
    // Pruning is exact: without it, the same choices, from at least as many sets.
    PreemptionConfig full = config;
    full.prune = false;
    for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive}) {
      const auto pruned = m == PreemptionMethod::kIncremental ? inc : exh;
      const auto all = preempt(s, pod, m, full);
      ASSERT_EQ(all.chosen.has_value(), pruned.chosen.has_value()) << trial;
      EXPECT_GE(all.sets_evaluated, pruned.sets_evaluated) << trial;
      if (!all.chosen) continue;
      EXPECT_EQ(all.chosen->node, pruned.chosen->node) << trial;
      EXPECT_EQ(all.chosen->victims, pruned.chosen->victims) << trial;
    }
    ASSERT_EQ(inc.chosen.has_value(), b.min_size != SIZE_MAX) << "trial " << trial << inc.reason;
    ASSERT_EQ(exh.chosen.has_value(), inc.chosen.has_value()) << "trial " << trial;
    if (!inc.chosen) {
      EXPECT_EQ(inc.status, DecisionStatus::kInfeasible) << "trial " << trial;
      EXPECT_FALSE(inc.reason.empty());
      continue;
    }
    EXPECT_EQ(inc.status, DecisionStatus::kChosen) << "trial " << trial;
    ++found;
    EXPECT_EQ(inc.chosen->victims.size(), b.min_size) << "trial " << trial;
    EXPECT_EQ(key_of(pod, *inc.chosen), b.best_at_min) << "trial " << trial;
    EXPECT_EQ(key_of(pod, *exh.chosen), b.best_all) << "trial " << trial;
    EXPECT_EQ(exh.chosen->victims.size(), b.best_all_min_size) << "trial " << trial;
    EXPECT_GE(key_of(pod, *exh.chosen), key_of(pod, *inc.chosen)) << "trial " << trial;
    for (int v : inc.chosen->victims) EXPECT_LT(s.pod(v).pod.priority, pod.priority);
    EXPECT_TRUE(acceptable(pod, inc.chosen->affinity));
    EXPECT_TRUE(acceptable(pod, exh.chosen->affinity));
  }
  EXPECT_GT(found, 30);  // the random clusters do exercise the searches
}

// Where the preemptor fits nowhere as the cluster stands, the searches that visit nodes from the
// lowest victim priority up choose exactly what the full searches choose (ties included: the
// random clusters share one topology and five priorities), at every alpha, and say the same when
// nothing is found.
TEST(Preempt, FromTheLowestVictimPriorityTheSameChoiceAsTheFullSearch) {
  core::RandomStream rng = core::RandomStreams(2025).stream("preemption/from-lowest");
  int compared = 0;
  int fewer_nodes = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const ClusterState s = random_cluster(rng, 2 + static_cast<int>(rng.below(30)));
    const Pod pod = random_preemptor(rng);
    if (place(s, pod).placement) continue;  // the promise holds only where placement fails
    for (const auto& [method, alpha] : {std::pair{PreemptionMethod::kIncremental, 0.1},
                                        {PreemptionMethod::kIncremental, 0.0},
                                        {PreemptionMethod::kIncremental, 0.5},
                                        {PreemptionMethod::kIncremental, 1.0},
                                        {PreemptionMethod::kExhaustive, 0.1},
                                        {PreemptionMethod::kExhaustive, 0.0},
                                        {PreemptionMethod::kExhaustive, 1.0}}) {
      SCOPED_TRACE(
          fmt::format("trial {} method {} alpha {}", trial, static_cast<int>(method), alpha));
      PreemptionConfig config;
      config.alpha = alpha;
      const auto full = preempt(s, pod, method, config);
      config.placement_failed = true;
      const auto fast = preempt(s, pod, method, config);
      ++compared;
      ASSERT_EQ(fast.status, full.status);
      EXPECT_EQ(fast.reason, full.reason);
      ASSERT_EQ(fast.chosen.has_value(), full.chosen.has_value());
      if (!full.chosen) continue;
      EXPECT_EQ(fast.chosen->node, full.chosen->node);
      EXPECT_EQ(fast.chosen->victims, full.chosen->victims);
      EXPECT_EQ(fast.chosen->affinity, full.chosen->affinity);
      EXPECT_EQ(fast.chosen->score, full.chosen->score);
      if (fast.nodes_examined < full.nodes_examined) ++fewer_nodes;
    }
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(fewer_nodes, 50) << "the search does skip nodes";
}

TEST(Preempt, ExhaustiveMatchesIncrementalWhenTheMinimalSetIsAlsoTheBest) {
  // One node, two 1-GPU victims on NUMA 0 holding the only NUMA node that could host 2 GPUs:
  // any single victim frees a same-NUMA place; the lower priority one is best for both searches.
  ClusterState s = test::cluster_of(1, two_by_two());
  bind(s, test::pod("lo", 1, 1), 0, {0});
  bind(s, test::pod("mid", 3, 1), 0, {1});
  bind(s, test::pod("h", 50, 6), 0, {2, 3, 4, 5, 6, 7});
  const Pod pod = test::pod("svc", 10, 1).numa().guaranteed();
  PreemptionConfig c;
  const auto inc = preempt(s, pod, PreemptionMethod::kIncremental, c);
  const auto exh = preempt(s, pod, PreemptionMethod::kExhaustive, c);
  ASSERT_TRUE(inc.chosen && exh.chosen);
  EXPECT_EQ(inc.chosen->victims, std::vector<int>{0});
  EXPECT_EQ(exh.chosen->victims, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(inc.chosen->score, exh.chosen->score);
  // S by hand: P = 1 / (1 - 1 + 1) = 1, T = 1: S = 1.
  EXPECT_DOUBLE_EQ(inc.chosen->score, 1.0);
}

// Shared by the QoS and alpha cases: on one 2 socket x 1 NUMA server (4 GPUs each),
//   NUMA 0: v1 (1 GPU, priority 1) and h0 (3 GPUs, priority 50);
//   NUMA 1: v2 (1 GPU, priority 5), h1 (2 GPUs, priority 50), one GPU free.
// Evicting v1 frees 2 GPUs across sockets; evicting v2 frees 2 GPUs on NUMA 1.
struct TwoChoices {
  ClusterState s = test::cluster_of(1, {});
  int v1 = -1, v2 = -1;
  TwoChoices() {
    v1 = bind(s, test::pod("v1", 1, 1), 0, {0});
    bind(s, test::pod("h0", 50, 3), 0, {1, 2, 3});
    v2 = bind(s, test::pod("v2", 5, 1), 0, {4});
    bind(s, test::pod("h1", 50, 2), 0, {5, 6});
  }
};

TEST(Preempt, AlphaOnePicksLowestPriorityAlphaZeroBestAffinity) {
  TwoChoices t;
  const Pod pod = test::pod("svc", 10, 2);  // best-effort, no requirement
  PreemptionConfig c;
  c.alpha = 1;
  auto d = preempt(t.s, pod, PreemptionMethod::kIncremental, c);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v1});
  EXPECT_EQ(d.chosen->affinity, Affinity::kCrossSocket);
  c.alpha = 0;
  d = preempt(t.s, pod, PreemptionMethod::kIncremental, c);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v2});
  EXPECT_EQ(d.chosen->affinity, Affinity::kSameNuma);
  // The default alpha keeps topology first: P differs by 1 - 1/5 = 0.8, T by 1 - 1/3.2 = 0.69.
  d = preempt(t.s, pod, PreemptionMethod::kIncremental, PreemptionConfig{});
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v2});
  // A100 scores (2x across sockets) give the same order at the default alpha.
  c.alpha = PreemptionConfig{}.alpha;
  c.topology = for_penalties(1.2, 2.0);
  EXPECT_DOUBLE_EQ(c.topology.cross_socket, 0.5);
  d = preempt(t.s, pod, PreemptionMethod::kIncremental, c);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v2});
}

TEST(Preempt, GuaranteedNeverGetsAnUnacceptableCandidate) {
  TwoChoices t;
  const Pod pod = test::pod("svc", 10, 2).numa().guaranteed();
  PreemptionConfig c;
  c.alpha = 1;  // priority alone would pick v1, whose place is across sockets
  for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive}) {
    const auto d = preempt(t.s, pod, m, c);
    ASSERT_TRUE(d.chosen) << to_string(m);
    EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v2}) << to_string(m);
    const auto candidates = node_candidates(t.s, pod, 0, m, c);
    ASSERT_TRUE(candidates) << candidates.error().message();
    for (const auto& cand : *candidates) {
      EXPECT_EQ(cand.affinity, Affinity::kSameNuma) << to_string(m);
    }
  }
  // Over random clusters too.
  core::RandomStream rng = core::RandomStreams(7).stream("preemption/qos");
  for (int trial = 0; trial < 40; ++trial) {
    const ClusterState s = random_cluster(rng, 3);
    Pod g = random_preemptor(rng);
    g.qos = Qos::kGuaranteed;
    for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive}) {
      const auto d = preempt(s, g, m, PreemptionConfig{});
      if (d.chosen) {
        EXPECT_TRUE(satisfies(d.chosen->affinity, g.topology)) << trial;
      }
    }
  }
}

TEST(Preempt, BestEffortPrefersCandidatesMeetingItsRequirement) {
  TwoChoices t;
  const Pod pod = test::pod("svc", 10, 2).socket();  // best-effort: socket is a preference
  PreemptionConfig c;
  c.alpha = 1;  // even with priority alone, the set meeting the preference sorts first
  const auto d = preempt(t.s, pod, PreemptionMethod::kIncremental, c);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v2});
  const auto all = node_candidates(t.s, pod, 0, PreemptionMethod::kIncremental, c).value();
  ASSERT_EQ(all.size(), 2u);  // both single victims are candidates for a best-effort pod
  EXPECT_EQ(all[0].victims, std::vector<int>{t.v2});
  EXPECT_EQ(all[1].victims, std::vector<int>{t.v1});
}

TEST(Preempt, DefaultK8sIsBlindToTopology) {
  TwoChoices t;
  const Pod pod = test::pod("svc", 10, 2).numa().guaranteed();
  const auto d = preempt(t.s, pod, PreemptionMethod::kDefaultK8s, PreemptionConfig{});
  ASSERT_TRUE(d.chosen);
  // Both victims removed, then reprieved highest priority first: v2 (5) can stay (v1's GPU plus
  // the free one make 2 by counts), v1 cannot: it frees a place across sockets although evicting
  // v2 would have given one NUMA node.
  EXPECT_EQ(d.chosen->victims, std::vector<int>{t.v1});
  EXPECT_EQ(d.chosen->affinity, Affinity::kCrossSocket);
  EXPECT_EQ(d.chosen->score, 0);
  const auto flex = preempt(t.s, pod, PreemptionMethod::kIncremental, PreemptionConfig{});
  ASSERT_TRUE(flex.chosen);
  EXPECT_EQ(flex.chosen->affinity, Affinity::kSameNuma);
}

TEST(Preempt, DefaultK8sNodeOrder) {
  const Pod pod = test::pod("svc", 10, 2);
  PreemptionConfig c;
  {  // lowest highest-victim priority: node0's victim has 5, node1's 3
    ClusterState s = test::cluster_of(2, {});
    bind(s, test::pod("a", 5, 8), 0, {0, 1, 2, 3, 4, 5, 6, 7});
    bind(s, test::pod("b", 3, 8), 1, {0, 1, 2, 3, 4, 5, 6, 7});
    EXPECT_EQ(preempt(s, pod, PreemptionMethod::kDefaultK8s, c).chosen->node, 1);
  }
  {  // same highest, smaller (offset) sum: node0 needs two priority-3 victims, node1 one
    ClusterState s = test::cluster_of(2, {});
    bind(s, test::pod("a", 3, 1), 0, {0});
    bind(s, test::pod("b", 3, 1), 0, {4});
    bind(s, test::pod("c", 50, 6), 0, {1, 2, 3, 5, 6, 7});
    bind(s, test::pod("d", 3, 2), 1, {0, 1});
    bind(s, test::pod("e", 50, 6), 1, {2, 3, 4, 5, 6, 7});
    const auto d = preempt(s, pod, PreemptionMethod::kDefaultK8s, c);
    EXPECT_EQ(d.chosen->node, 1);
    EXPECT_EQ(d.chosen->victims, std::vector<int>{3});
  }
  {  // a lower priority sum beats fewer victims: 2 x priority 1 vs 1 x priority 2 is decided
     // by the highest victim priority (1 < 2) before the count
    ClusterState s = test::cluster_of(2, {});
    bind(s, test::pod("a", 1, 1), 0, {0});
    bind(s, test::pod("b", 1, 1), 0, {1});
    bind(s, test::pod("c", 50, 6), 0, {2, 3, 4, 5, 6, 7});
    bind(s, test::pod("d", 2, 2), 1, {0, 1});
    bind(s, test::pod("e", 50, 6), 1, {2, 3, 4, 5, 6, 7});
    const auto d = preempt(s, pod, PreemptionMethod::kDefaultK8s, c);
    EXPECT_EQ(d.chosen->node, 0);
    EXPECT_EQ(d.chosen->victims.size(), 2u);
  }
  {  // all else equal: the node whose highest-priority victims started latest
    ClusterState s = test::cluster_of(3, {});
    bind(s, test::pod("a", 3, 8).start(10), 0, {0, 1, 2, 3, 4, 5, 6, 7});
    bind(s, test::pod("b", 3, 8).start(30), 1, {0, 1, 2, 3, 4, 5, 6, 7});
    bind(s, test::pod("c", 3, 8).start(20), 2, {0, 1, 2, 3, 4, 5, 6, 7});
    EXPECT_EQ(preempt(s, pod, PreemptionMethod::kDefaultK8s, c).chosen->node, 1);
  }
  {  // reprieve keeps the more important pod: priority 2 stays, priority 1 goes
    ClusterState s = test::cluster_of(1, {});
    bind(s, test::pod("lo", 1, 2), 0, {0, 1});
    bind(s, test::pod("hi", 2, 2), 0, {2, 3});
    bind(s, test::pod("x", 50, 4), 0, {4, 5, 6, 7});
    const auto d = preempt(s, pod, PreemptionMethod::kDefaultK8s, c);
    EXPECT_EQ(d.chosen->victims, std::vector<int>{0});
    // Equal priority: the earlier started one is more important and is reprieved first.
    ClusterState e = test::cluster_of(1, {});
    bind(e, test::pod("new", 1, 2).start(9), 0, {0, 1});
    bind(e, test::pod("old", 1, 2).start(1), 0, {2, 3});
    bind(e, test::pod("x", 50, 4), 0, {4, 5, 6, 7});
    EXPECT_EQ(preempt(e, pod, PreemptionMethod::kDefaultK8s, c).chosen->victims,
              std::vector<int>{0});
  }
}

TEST(Preempt, OnlyStrictlyLowerPriorityAndPruning) {
  ClusterState s = test::cluster_of(2, {});
  bind(s, test::pod("same", 10, 8), 0, {0, 1, 2, 3, 4, 5, 6, 7});  // equal priority: untouchable
  bind(s, test::pod("low", 1, 1), 1, {0});
  bind(s, test::pod("high", 50, 7), 1, {1, 2, 3, 4, 5, 6, 7});
  const Pod pod = test::pod("svc", 10, 2);
  for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive,
                 PreemptionMethod::kDefaultK8s}) {
    const auto d = preempt(s, pod, m, PreemptionConfig{});
    EXPECT_FALSE(d.chosen) << to_string(m);
    EXPECT_EQ(d.status, DecisionStatus::kInfeasible) << to_string(m);
    EXPECT_EQ(d.nodes_examined, 2) << to_string(m);
    // Each node costs its "drain everything" check and nothing more; FlexTopo's searches also
    // try the node as it is first (for node0, with no victims, that is the same set).
    EXPECT_EQ(d.sets_evaluated, m == PreemptionMethod::kDefaultK8s ? 2 : 3) << to_string(m);
    EXPECT_NE(d.reason.find("2 of them out of reach"), std::string::npos) << d.reason;
  }
}

TEST(Preempt, MaxVictimsBoundsTheSearch) {
  ClusterState s = test::cluster_of(1, {});
  for (int g = 0; g < 8; ++g) bind(s, test::pod(fmt::format("p{}", g), 1, 1), 0, {g});
  const Pod pod = test::pod("svc", 10, 3);
  PreemptionConfig c;
  c.max_victims = 2;
  const auto d = preempt(s, pod, PreemptionMethod::kIncremental, c);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status, DecisionStatus::kInfeasible);
  EXPECT_NE(d.reason.find("max_victims = 2"), std::string::npos) << d.reason;
  c.max_victims = 3;
  const auto ok = preempt(s, pod, PreemptionMethod::kIncremental, c);
  ASSERT_TRUE(ok.chosen);
  // Three victims on one NUMA node beat three spread over both (T), lowest indices on ties.
  EXPECT_EQ(ok.chosen->victims, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ok.chosen->affinity, Affinity::kSameNuma);
  // Level by level: size 0, the drain, sizes 1 and 2 in full (1 + 1 + 8 + 28), then size 3 until
  // the first set reaches the most S any 3 victims of priority 1 can: 1 more. A full level 3
  // would be 56 sets; node_candidates, which lists them all, evaluates them.
  EXPECT_EQ(ok.sets_evaluated, 39);
  EXPECT_EQ(node_candidates(s, pod, 0, PreemptionMethod::kIncremental, c).value().size(), 56u);
}

TEST(Preempt, FitsWithoutVictims) {
  ClusterState s = test::cluster_of(1, {});
  const auto d = preempt(s, test::pod("svc", 10, 2), PreemptionMethod::kIncremental, {});
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.status, DecisionStatus::kChosen);
  EXPECT_TRUE(d.chosen->victims.empty());
  EXPECT_TRUE(parse_preemption_method("exhaustive"));
  EXPECT_FALSE(parse_preemption_method("greedy"));
}

// A malformed request is kInvalid with what is wrong, and nothing is searched; a valid one that
// no node can take is kInfeasible.
TEST(Preempt, InvalidInputIsNotInfeasible) {
  ClusterState s = test::cluster_of(1, {});
  const Pod svc = test::pod("svc", 10, 2);
  const auto invalid = [&](const Pod& pod, const PreemptionConfig& c, std::string_view why) {
    for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive,
                   PreemptionMethod::kDefaultK8s}) {
      const auto d = preempt(s, pod, m, c);
      EXPECT_EQ(d.status, DecisionStatus::kInvalid) << why << " " << to_string(m);
      EXPECT_FALSE(d.chosen) << why;
      EXPECT_EQ(d.nodes_examined, 0) << why;
      EXPECT_NE(d.reason.find(why), std::string::npos) << d.reason;
    }
    if (!c.nodes.empty()) return;  // node_candidates searches the node it is given instead
    const auto listed = node_candidates(s, pod, 0, PreemptionMethod::kIncremental, c);
    ASSERT_FALSE(listed) << why;
    EXPECT_EQ(listed.error().code(), core::Code::kInvalidArgument);
    EXPECT_NE(listed.error().message().find(why), std::string::npos) << listed.error().message();
  };
  PreemptionConfig bad;
  bad.alpha = 1.5;
  invalid(svc, bad, "alpha 1.5 is outside [0, 1]");
  bad = {};
  bad.topology = for_penalties(0, 3.2);  // 1 / 0: no finite score
  invalid(svc, bad, "topology score inf");
  bad = {};
  bad.max_victims = -1;
  invalid(svc, bad, "max_victims -1 is negative");
  bad = {};
  bad.nodes = {4};
  invalid(svc, bad, "node 4 does not exist (1 nodes)");
  invalid(test::pod("", 10, 2), {}, "has no name");
  const auto missing = node_candidates(s, svc, 9, PreemptionMethod::kIncremental, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("node 9 does not exist"), std::string::npos);

  // Nine GPUs on 8-GPU servers: valid, and infeasible whatever is evicted.
  const auto too_big = preempt(s, test::pod("big", 10, 9), PreemptionMethod::kIncremental, {});
  EXPECT_EQ(too_big.status, DecisionStatus::kInfeasible);
  EXPECT_EQ(too_big.nodes_examined, 1);
  EXPECT_NE(too_big.reason.find("no node where evicting"), std::string::npos) << too_big.reason;
  const auto none =
      node_candidates(s, test::pod("big", 10, 9), 0, PreemptionMethod::kIncremental, {});
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(to_string(DecisionStatus::kInvalid), "invalid");
  EXPECT_EQ(to_string(DecisionStatus::kInfeasible), "infeasible");
}

TEST(Preempt, RestrictedToTheGivenNodes) {
  ClusterState s = test::cluster_of(2, {});
  bind(s, test::pod("a", 1, 8), 0, {0, 1, 2, 3, 4, 5, 6, 7});
  bind(s, test::pod("b", 2, 8), 1, {0, 1, 2, 3, 4, 5, 6, 7});
  PreemptionConfig c;
  c.nodes = {1};
  const auto d = preempt(s, test::pod("svc", 10, 1), PreemptionMethod::kIncremental, c);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->node, 1);
  EXPECT_EQ(d.nodes_examined, 1);
}

TEST(Preempt, SameStateSameDecision) {
  core::RandomStream rng = core::RandomStreams(99).stream("preemption/determinism");
  PreemptionWorkspace workspace;
  for (int trial = 0; trial < 10; ++trial) {
    const ClusterState s = random_cluster(rng, 4);
    const ClusterState copy = s;
    const Pod pod = random_preemptor(rng);
    for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive,
                   PreemptionMethod::kDefaultK8s}) {
      const auto a = preempt(s, pod, m, PreemptionConfig{});
      // A workspace reused across clusters and methods leaves nothing behind for the next.
      const auto b = preempt(copy, pod, m, PreemptionConfig{}, workspace);
      ASSERT_EQ(a.status, b.status);
      ASSERT_EQ(a.chosen.has_value(), b.chosen.has_value());
      EXPECT_EQ(a.reason, b.reason);
      EXPECT_EQ(a.sets_evaluated, b.sets_evaluated);
      if (!a.chosen) continue;
      EXPECT_EQ(a.chosen->node, b.chosen->node);
      EXPECT_EQ(a.chosen->victims, b.chosen->victims);
      EXPECT_EQ(a.chosen->score, b.chosen->score);
    }
  }
}

TEST(NodeCandidates, BestFirstAndConsistentWithPreempt) {
  ClusterState s = test::cluster_of(1, {});
  for (int g = 0; g < 8; ++g) {
    bind(s, test::pod(fmt::format("p{}", g), 1 + g, 1), 0, {g});
  }
  const Pod pod = test::pod("svc", 10, 1).numa().guaranteed();
  const auto inc = node_candidates(s, pod, 0, PreemptionMethod::kIncremental, {}).value();
  ASSERT_EQ(inc.size(), 8u);  // every single victim
  for (std::size_t i = 1; i < inc.size(); ++i) EXPECT_GE(inc[i - 1].score, inc[i].score);
  EXPECT_EQ(inc[0].victims, std::vector<int>{0});  // the lowest priority
  EXPECT_EQ(inc[0].priority_sum, 1);
  const auto d = preempt(s, pod, PreemptionMethod::kIncremental, {});
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->victims, inc[0].victims);
  const auto exh = node_candidates(s, pod, 0, PreemptionMethod::kExhaustive, {}).value();
  ASSERT_EQ(exh.size(), 8u + 28u + 56u + 70u);
  EXPECT_EQ(exh[0].victims, std::vector<int>{0});
  const auto k8s = node_candidates(s, pod, 0, PreemptionMethod::kDefaultK8s, {}).value();
  ASSERT_EQ(k8s.size(), 1u);
  EXPECT_EQ(k8s[0].victims, std::vector<int>{0});
}

}  // namespace
}  // namespace tessera::cluster
