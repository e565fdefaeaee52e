// The paper's protocol pieces: build_saturated_cluster and run_preemption_stream.

#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/cluster/policy/preemption.hpp"
#include "tessera/hw/topology/presets.hpp"

namespace tessera::sim {
namespace {

using cluster::PreemptionMethod;
using cluster::Qos;
using cluster::TopologyRequirement;

constexpr std::int64_t kGiB = std::int64_t{1024} * 1024 * 1024;

PodClass make_class(std::string name, double weight, std::int32_t priority, Qos qos,
                    TopologyRequirement topo, int gpus) {
  PodClass c;
  c.name = std::move(name);
  c.weight = weight;
  c.priority = priority;
  c.qos = qos;
  c.topology = topo;
  c.request.gpus = gpus;
  c.request.cpus = 8 * gpus;  // rtx4090-2s: 64 cores over 8 GPUs
  c.request.memory_bytes = 64 * kGiB * gpus;
  return c;
}

SaturationSpec small_spec(int nodes) {
  SaturationSpec s;
  s.preset = "rtx4090-2s";
  s.nodes = nodes;
  s.fill = {make_class("svc", 0.3, 500, Qos::kBestEffort, TopologyRequirement::kSocket, 1),
            make_class("batch-1", 0.4, 0, Qos::kBestEffort, TopologyRequirement::kNone, 1),
            make_class("batch-2", 0.2, 0, Qos::kBestEffort, TopologyRequirement::kNone, 2),
            make_class("train-4", 0.1, 100, Qos::kBestEffort, TopologyRequirement::kNone, 4)};
  return s;
}

std::vector<PodClass> preemptors() {
  return {make_class("g1", 0.4, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 1),
          make_class("g2", 0.4, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 2),
          make_class("be2", 0.2, 1000, Qos::kBestEffort, TopologyRequirement::kNuma, 2)};
}

int held_gpus(const cluster::ClusterState& s) {
  int n = 0;
  for (const auto& node : s.nodes()) {
    for (int o : node.gpu_owner()) n += o >= 0 ? 1 : 0;
  }
  return n;
}

// The bound pods as (name, node, gpus) for comparing two states.
std::vector<std::tuple<std::string, int, std::vector<int>>> layout(const cluster::ClusterState& s) {
  std::vector<std::tuple<std::string, int, std::vector<int>>> out;
  for (const auto& p : s.pods()) {
    if (p.node >= 0) out.emplace_back(p.pod.name, p.node, p.assignment.gpus);
  }
  return out;
}

TEST(SaturatedCluster, FullFillHoldsEveryGpuAndIsDeterministic) {
  auto a = build_saturated_cluster(small_spec(6), 7);
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(held_gpus(*a), 6 * 8);
  auto b = build_saturated_cluster(small_spec(6), 7);
  ASSERT_TRUE(b);
  EXPECT_EQ(layout(*a), layout(*b));
  auto c = build_saturated_cluster(small_spec(6), 8);
  ASSERT_TRUE(c);
  EXPECT_NE(layout(*a), layout(*c));
}

TEST(SaturatedCluster, PartialFillStopsAtTheTarget) {
  SaturationSpec s = small_spec(10);
  s.gpu_fill = 0.5;
  auto st = build_saturated_cluster(s, 3);
  ASSERT_TRUE(st) << st.error().message();
  const int held = held_gpus(*st);
  EXPECT_GE(held, 40);
  EXPECT_LT(held, 40 + 4);  // at most one pod past the target, of at most 4 GPUs
}

TEST(SaturatedCluster, RejectsBadSpecsNamingTheField) {
  SaturationSpec s = small_spec(2);
  s.preset = "no-such-server";
  auto r = build_saturated_cluster(s, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("no-such-server"), std::string::npos);

  s = small_spec(2);
  s.fill.clear();
  r = build_saturated_cluster(s, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("saturation.fill"), std::string::npos);

  s = small_spec(2);
  s.fill.push_back(make_class("huge", 1, 0, Qos::kBestEffort, TopologyRequirement::kNone, 16));
  r = build_saturated_cluster(s, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("huge"), std::string::npos);

  s = small_spec(2);
  s.gpu_fill = 1.5;
  r = build_saturated_cluster(s, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("gpu_fill"), std::string::npos);
}

TEST(PreemptionStream, SamePreemptorsForEveryMethodAndVictimsRankBelow) {
  auto base = build_saturated_cluster(small_spec(8), 11);
  ASSERT_TRUE(base);
  PreemptionStreamSpec spec;
  spec.count = 20;
  spec.preemptors = preemptors();
  std::vector<std::vector<PreemptionRecord>> runs;
  for (auto m : {PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive,
                 PreemptionMethod::kDefaultK8s}) {
    cluster::ClusterState state = *base;
    spec.method = m;
    auto recs = run_preemption_stream(state, spec, 5);
    ASSERT_TRUE(recs) << recs.error().message();
    ASSERT_EQ(recs->size(), 20u);
    for (const auto& r : *recs) {
      EXPECT_EQ(r.method, m);
      for (auto p : r.victim_priorities) EXPECT_LT(p, r.priority) << r.preemptor;
      if (r.preempted) {
        EXPECT_TRUE(r.placed) << r.preemptor << ": " << r.reason;
        EXPECT_FALSE(r.victims.empty());
        ASSERT_TRUE(r.affinity.has_value());
        EXPECT_EQ(r.hit, cluster::satisfies(*r.affinity, r.requirement));
        // The preemptor is bound where the record says.
        auto idx = state.find_pod(r.preemptor);
        ASSERT_TRUE(idx.has_value());
        EXPECT_EQ(state.pod(*idx).node, r.node);
      }
      // FlexTopo's searches never bind a guaranteed pod below its requirement.
      if (m != PreemptionMethod::kDefaultK8s && r.placed && r.qos == Qos::kGuaranteed) {
        EXPECT_TRUE(r.hit) << r.preemptor;
      }
    }
    runs.push_back(std::move(*recs));
  }
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[0][i].preemptor, runs[1][i].preemptor);
    EXPECT_EQ(runs[0][i].preemptor, runs[2][i].preemptor);
  }
  // On the same first state, incremental's set is no larger than exhaustive's.
  if (runs[0][0].preempted && runs[1][0].preempted) {
    EXPECT_LE(runs[0][0].victims.size(), runs[1][0].victims.size());
  }
}

TEST(PreemptionStream, RejectsEmptyPreemptorsAndNegativeCounts) {
  auto base = build_saturated_cluster(small_spec(2), 1);
  ASSERT_TRUE(base);
  PreemptionStreamSpec spec;
  spec.count = 3;
  auto r = run_preemption_stream(*base, spec, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("preemptors"), std::string::npos);
  spec.preemptors = preemptors();
  spec.count = -1;
  r = run_preemption_stream(*base, spec, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("count"), std::string::npos);
}

// One rtx4090-2s node, each NUMA node holding one priority-0 pod and three priority-500 pods of
// one GPU each. A 2-GPU guaranteed pod needing one NUMA node: the default search evicts the two
// priority-0 pods, one per NUMA node, and the preemptor lands across sockets (a miss); the
// incremental search evicts two pods of one NUMA node (a hit), at the cost of a higher-priority
// victim.
TEST(PreemptionStream, DefaultMissesWhereIncrementalHits) {
  auto topo = hw::preset("rtx4090-2s", "n0");
  ASSERT_TRUE(topo) << topo.error().message();
  auto shared = std::make_shared<const hw::HostTopology>(std::move(*topo));
  cluster::ClusterState base;
  ASSERT_TRUE(base.add_node("n0", shared));
  int seq = 0;
  for (int numa = 0; numa < 2; ++numa) {
    const auto gpus = shared->gpus_of_numa(numa);
    const auto groups = shared->core_groups_of_numa(numa);
    ASSERT_EQ(gpus.size(), 4u);
    const std::size_t groups_per_pod = groups.size() / 4;
    for (int k = 0; k < 4; ++k) {
      cluster::Pod p;
      p.name = fmt::format("numa{}-pod{}", numa, k);
      p.priority = k == 0 ? 0 : 500;
      p.request.gpus = 1;
      p.request.cpus = 0;
      p.start_seq = seq++;
      cluster::Assignment a;
      a.gpus = {gpus[static_cast<std::size_t>(k)]};
      for (std::size_t g = 0; g < groups_per_pod; ++g) {
        a.core_groups.push_back(groups[static_cast<std::size_t>(k) * groups_per_pod + g]);
      }
      int cores = 0;
      for (int g : a.core_groups) cores += shared->core_group(g).cores;
      p.request.cpus = cores;
      a.affinity = cluster::Affinity::kSameNuma;
      ASSERT_TRUE(base.bind(p, 0, a));
    }
  }
  PreemptionStreamSpec spec;
  spec.count = 1;
  PodClass c = make_class("g2", 1, 1000, Qos::kGuaranteed, TopologyRequirement::kNuma, 2);
  c.request.cpus = 0;
  c.request.memory_bytes = 0;
  spec.preemptors = {c};

  cluster::ClusterState s1 = base;
  spec.method = PreemptionMethod::kDefaultK8s;
  auto def = run_preemption_stream(s1, spec, 1);
  ASSERT_TRUE(def);
  ASSERT_TRUE((*def)[0].preempted);
  EXPECT_EQ((*def)[0].victims, (std::vector<std::string>{"numa0-pod0", "numa1-pod0"}));
  EXPECT_FALSE((*def)[0].hit);
  EXPECT_EQ((*def)[0].affinity, cluster::Affinity::kCrossSocket);

  cluster::ClusterState s2 = base;
  spec.method = PreemptionMethod::kIncremental;
  auto inc = run_preemption_stream(s2, spec, 1);
  ASSERT_TRUE(inc);
  ASSERT_TRUE((*inc)[0].preempted);
  EXPECT_TRUE((*inc)[0].hit);
  EXPECT_EQ((*inc)[0].affinity, cluster::Affinity::kSameNuma);
  ASSERT_EQ((*inc)[0].victims.size(), 2u);
  // The lowest-priority pod of the chosen NUMA node is among them.
  EXPECT_TRUE((*inc)[0].victims[0] == "numa0-pod0" || (*inc)[0].victims[0] == "numa1-pod0");
}

}  // namespace
}  // namespace tessera::sim
