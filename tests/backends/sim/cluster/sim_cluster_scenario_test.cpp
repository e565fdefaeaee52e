// The scenario simulator: scenario files, the run's invariants, determinism, the examples.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/core/config.hpp"

namespace tessera::sim {
namespace {

// Four 8-GPU servers; a diurnal 2-GPU guaranteed service peaking at 10 replicas (20 GPUs) and
// exponential batch jobs offering more than the rest: the peak must preempt.
constexpr const char* kSmall = R"(
name: small
seed: 3
duration: 12h
sample_interval: 30min
preemption: {method: incremental}
nodes:
  - {preset: rtx4090-2s, count: 4, name_prefix: n}
services:
  - name: llm
    priority: 1000
    qos: guaranteed
    topology: numa
    gpus: 2
    cpus: 16
    memory_gib: 64
    replicas: {min: 2, max: 12}
    load: {mean: 60, amplitude: 0.6, period: 12h, peak_at: 6h, noise: 0.0, per_replica: 10}
    autoscale_interval: 10min
  - name: svc
    priority: 500
    qos: best-effort
    topology: socket
    gpus: 1
    cpus: 8
    memory_gib: 32
    replicas: {min: 4, max: 4}
batches:
  - name: batch
    arrivals_per_hour: 30
    durations: {source: exponential, mean: 2h}
    on_eviction: requeue
    shapes:
      - {name: b1, weight: 0.5, gpus: 1, cpus: 8, memory_gib: 32}
      - {name: b2, weight: 0.3, gpus: 2, cpus: 16, memory_gib: 64}
      - {name: b4, weight: 0.2, gpus: 4, cpus: 32, memory_gib: 128}
)";

ClusterScenario parse(const std::string& text) {
  auto root = core::ConfigNode::parse(text, "small.yaml");
  EXPECT_TRUE(root) << root.error().message();
  auto sc = parse_cluster_scenario(root.value());
  EXPECT_TRUE(sc) << sc.error().message();
  return sc.value();
}

std::string parse_error(const std::string& text) {
  auto root = core::ConfigNode::parse(text, "bad.yaml");
  if (!root) return root.error().message();
  auto sc = parse_cluster_scenario(*root);
  return sc ? std::string() : sc.error().message();
}

TEST(ClusterSimScenario, ParsesEveryField) {
  const ClusterScenario sc = parse(kSmall);
  EXPECT_EQ(sc.name, "small");
  EXPECT_EQ(sc.seed, 3u);
  EXPECT_EQ(sc.duration, 12 * 3600 * core::kNanosPerSecond);
  ASSERT_EQ(sc.nodes.size(), 1u);
  EXPECT_EQ(sc.nodes[0].count, 4);
  ASSERT_EQ(sc.services.size(), 2u);
  EXPECT_EQ(sc.services[0].replica.request.gpus, 2);
  EXPECT_EQ(sc.services[0].replica.qos, cluster::Qos::kGuaranteed);
  EXPECT_EQ(sc.services[0].replica.topology, cluster::TopologyRequirement::kNuma);
  EXPECT_DOUBLE_EQ(sc.services[0].amplitude, 0.6);
  EXPECT_EQ(sc.services[1].min_replicas, 4);
  ASSERT_EQ(sc.batches.size(), 1u);
  EXPECT_EQ(sc.batches[0].shapes.size(), 3u);
  EXPECT_TRUE(sc.batches[0].requeue_evicted);
  EXPECT_EQ(sc.method, cluster::PreemptionMethod::kIncremental);
}

TEST(ClusterSimScenario, ErrorsNameFileLineAndField) {
  std::string e =
      parse_error("duration: 1h\nnodes: [{preset: rtx4090-2s, count: 1}]\nbatchez: []\n");
  EXPECT_NE(e.find("bad.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("batchez"), std::string::npos) << e;
  e = parse_error(
      "duration: 1h\nnodes: [{preset: rtx4090-2s, count: 1}]\npreemption: {method: greedy}\n"
      "batches: [{arrivals_per_hour: 1, shapes: [{gpus: 1}]}]\n");
  EXPECT_NE(e.find("greedy"), std::string::npos) << e;
  e = parse_error("nodes: [{preset: rtx4090-2s, count: 1}]\n");
  EXPECT_NE(e.find("duration"), std::string::npos) << e;
  e = parse_error(
      "duration: 1h\nnodes: [{preset: rtx4090-2s, count: 1}]\n"
      "batches: [{arrivals_per_hour: 1, shapes: [{gpus: 0}]}]\n");
  EXPECT_NE(e.find("request something"), std::string::npos) << e;
  e = parse_error("duration: 1h\nnodes: [{count: 1}]\nbatches: []\n");
  EXPECT_NE(e.find("exactly one of 'preset', 'topology_file' and 'openb_node_csv'"),
            std::string::npos)
      << e;
}

TEST(ClusterSimRun, InvariantsHold) {
  const ClusterScenario sc = parse(kSmall);
  auto r = run_cluster_sim(sc);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->nodes, 4);
  EXPECT_EQ(r->total_gpus, 32);
  // One sample at 0 and one per 30 min through 12 h.
  EXPECT_EQ(r->utilisation.size(), 25u);
  for (const auto& u : r->utilisation) {
    EXPECT_GE(u.gpu, 0.0);
    EXPECT_LE(u.gpu, 1.0);
    EXPECT_LE(u.cpu, 1.0);
  }
  const ClusterSimSummary s = summarize(*r);
  EXPECT_GT(s.preemptions, 0) << "the service's peak should preempt batch jobs";
  EXPECT_GT(r->pods_completed, 0);
  EXPECT_GT(s.gpu_utilisation_mean, 0.5);
  std::int64_t victims = 0;
  for (const auto& p : r->preemptions) {
    for (auto v : p.victim_priorities) EXPECT_LT(v, p.priority);
    if (p.preempted) {
      EXPECT_TRUE(p.placed) << p.preemptor << ": " << p.reason;
      EXPECT_EQ(p.hit, cluster::satisfies(*p.affinity, p.requirement));
      if (p.qos == cluster::Qos::kGuaranteed) {
        EXPECT_TRUE(p.hit) << p.preemptor;
      }
    }
    victims += static_cast<std::int64_t>(p.victims.size());
  }
  EXPECT_EQ(victims, r->evictions);
  EXPECT_EQ(r->evictions, r->requeued + r->lost);
  EXPECT_EQ(r->lost, 0);  // on_eviction: requeue
  EXPECT_GT(r->evicted_gpu_hours, 0.0);
}

TEST(ClusterSimRun, SameSeedSameBytesOtherSeedOtherRun) {
  const ClusterScenario sc = parse(kSmall);
  auto a = run_cluster_sim(sc);
  auto b = run_cluster_sim(sc);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(to_json(*a).dump(), to_json(*b).dump());
  ClusterScenario other = sc;
  other.seed = 4;
  auto c = run_cluster_sim(other);
  ASSERT_TRUE(c);
  EXPECT_NE(to_json(*a).dump(), to_json(*c).dump());
}

TEST(ClusterSimRun, LostEvictionsAreCounted) {
  ClusterScenario sc = parse(kSmall);
  sc.batches[0].requeue_evicted = false;
  auto r = run_cluster_sim(sc);
  ASSERT_TRUE(r);
  ASSERT_GT(r->evictions, 0);
  // Services' replicas are always recreated; batch victims are lost.
  std::int64_t batch_victims = 0;
  for (const auto& p : r->preemptions) {
    for (const auto& v : p.victims) batch_victims += v.starts_with("batch/") ? 1 : 0;
  }
  EXPECT_EQ(r->lost, batch_victims);
}

TEST(ClusterSimRun, DefaultK8sMissesAtLeastAsOftenAsIncremental) {
  ClusterScenario sc = parse(kSmall);
  auto inc = run_cluster_sim(sc);
  sc.method = cluster::PreemptionMethod::kDefaultK8s;
  auto def = run_cluster_sim(sc);
  ASSERT_TRUE(inc && def);
  const auto si = summarize(*inc), sd = summarize(*def);
  EXPECT_EQ(si.hits, si.preemptions);  // every preemptor here asks one NUMA node, guaranteed
  EXPECT_LE(sd.hit_rate, si.hit_rate);
  EXPECT_EQ(inc->bound_below_requirement, 0);
}

TEST(ClusterSimRun, PodsNoNodeCanHoldAreCountedNotQueued) {
  ClusterScenario sc = parse(kSmall);
  PodClass huge;
  huge.name = "huge";
  huge.request.gpus = 16;
  sc.batches[0].shapes = {huge};
  auto r = run_cluster_sim(sc);
  ASSERT_TRUE(r);
  EXPECT_GT(r->unschedulable, 0);
  for (const auto& w : r->pending) EXPECT_NE(w.workload, "batch");
}

// An NCCL topology gives its NUMA nodes no memory: unsized, memory is not counted and 64 GiB pods
// fit; sized at 10 GiB by the pool, none does.
TEST(ClusterSimRun, ANodePoolSizesTheNumaMemoryItsTopologyFileLacks) {
  const std::string nccl =
      std::string(TESSERA_SHARED_DATA_DIR) + "/topology/nccl_azure/ndv5-topo.xml";
  auto scenario = [&](const std::string& memory) {
    return parse(fmt::format(R"(
name: nccl-memory
seed: 1
duration: 2h
sample_interval: 30min
preemption: {{method: incremental}}
nodes:
  - {{topology_file: {}, count: 2, name_prefix: nd{}}}
batches:
  - name: batch
    arrivals_per_hour: 20
    durations: {{source: exponential, mean: 1h}}
    on_eviction: requeue
    shapes:
      - {{name: b1, weight: 1.0, gpus: 1, cpus: 4, memory_gib: 64}}
)",
                             nccl, memory));
  };
  auto unsized = run_cluster_sim(scenario(""));
  auto sized = run_cluster_sim(scenario(", numa_memory_gib: 10"));
  ASSERT_TRUE(unsized && sized);
  EXPECT_EQ(unsized->unschedulable, 0);
  EXPECT_GT(unsized->pods_completed, 0);
  EXPECT_GT(sized->unschedulable, 0);
  EXPECT_EQ(sized->pods_completed, 0);

  auto root = core::ConfigNode::parse(R"(
name: x
duration: 1h
nodes:
  - {preset: rtx4090-2s, count: 1, numa_memory_gib: 10}
)",
                                      "x.yaml");
  ASSERT_TRUE(root);
  auto refused = parse_cluster_scenario(*root);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("sizes the NUMA nodes of a 'topology_file'"),
            std::string::npos)
      << refused.error().message();
}

TEST(ClusterSimExamples, EveryExampleParses) {
  const std::filesystem::path dir = std::filesystem::path(TESSERA_SOURCE_DIR) / "examples/cluster";
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".yaml") continue;
    auto sc = load_cluster_scenario(f.path().string());
    EXPECT_TRUE(sc) << f.path() << ": " << sc.error().message();
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(ClusterSimExamples, OpenbTraceLoadsWithItsMapping) {
  TraceSpec t;
  t.openb_pod_csv = std::string(TESSERA_SHARED_DATA_DIR) +
                    "/cluster_traces/alibaba_gpu_v2023/csv/openb_pod_list_default.csv";
  auto pods = load_openb_pods(t);
  ASSERT_TRUE(pods) << pods.error().message();
  // 8152 rows, 1088 without GPUs; the rest with a deletion after creation.
  EXPECT_GT(pods->size(), 6000u);
  EXPECT_LE(pods->size(), 7064u);
  for (const auto& p : *pods) {
    EXPECT_GE(p.pod.request.gpus, 1);
    EXPECT_GT(p.lifetime, 0);
    if (p.pod.priority == 1000) {
      EXPECT_EQ(p.pod.qos, cluster::Qos::kGuaranteed);
    }
  }
  t.max_pods = 10;
  auto ten = load_openb_pods(t);
  ASSERT_TRUE(ten);
  EXPECT_EQ(ten->size(), 10u);
}

}  // namespace
}  // namespace tessera::sim
