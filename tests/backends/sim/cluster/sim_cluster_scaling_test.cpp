// The scenario simulator at scale: scenarios scaled to a node count, and the openb trace's own
// 1,523-node inventory.

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"

namespace tessera::sim {
namespace {

const std::string kExamples = std::string(TESSERA_SOURCE_DIR) + "/examples/cluster/";
const std::string kOpenbNodes =
    std::string(TESSERA_SHARED_DATA_DIR) +
    "/cluster_traces/alibaba_gpu_v2023/csv/openb_node_list_all_node.csv";

ClusterScenario example(const std::string& name) {
  auto sc = load_cluster_scenario(kExamples + name);
  EXPECT_TRUE(sc) << sc.error().message();
  return sc.value();
}

TEST(ClusterSimScaling, ScalesNodesServicesAndArrivals) {
  const ClusterScenario sc = example("flextopo-4090.yaml");
  auto big = scale_to_nodes(sc, 5000);
  ASSERT_TRUE(big) << big.error().message();
  ASSERT_EQ(big->nodes.size(), 1u);
  EXPECT_EQ(big->nodes[0].count, 5000);
  EXPECT_EQ(big->services[0].min_replicas, 50 * sc.services[0].min_replicas);
  EXPECT_EQ(big->services[0].max_replicas, 50 * sc.services[0].max_replicas);
  EXPECT_DOUBLE_EQ(big->services[0].mean_load, 50 * sc.services[0].mean_load);
  EXPECT_DOUBLE_EQ(big->batches[0].arrivals_per_hour, 50 * sc.batches[0].arrivals_per_hour);
  EXPECT_EQ(big->seed, sc.seed);
  EXPECT_EQ(big->duration, sc.duration);
}

TEST(ClusterSimScaling, KeepsEveryPoolAndTheTotal) {
  ClusterScenario sc = example("flextopo-4090.yaml");
  sc.nodes.push_back(sc.nodes[0]);
  sc.nodes[1].name_prefix = "second";
  sc.nodes[1].count = 3;  // 100 + 3 nodes
  auto scaled = scale_to_nodes(sc, 1000);
  ASSERT_TRUE(scaled) << scaled.error().message();
  EXPECT_EQ(scaled->nodes[0].count, 971);  // round(100 * 1000 / 103)
  EXPECT_EQ(scaled->nodes[1].count, 29);
  auto tiny = scale_to_nodes(sc, 1);
  EXPECT_FALSE(tiny);
}

TEST(ClusterSimScaling, RefusesTracesNodeListsAndOddCounts) {
  const ClusterScenario sc = example("flextopo-4090.yaml");
  EXPECT_FALSE(scale_to_nodes(sc, 0));
  EXPECT_FALSE(scale_to_nodes(sc, 100'001));
  auto trace = scale_to_nodes(example("openb-trace.yaml"), 100);
  ASSERT_FALSE(trace);
  EXPECT_NE(trace.error().message().find("trace"), std::string::npos) << trace.error().message();
  EXPECT_FALSE(scale_to_nodes(example("openb-inventory.yaml"), 100));
}

TEST(ClusterSimScaling, ScaledToItsOwnSizeRunsTheSame) {
  ClusterScenario sc = example("a100-mixed.yaml");
  sc.duration = 6 * 3600 * core::kNanosPerSecond;
  auto same = scale_to_nodes(sc, sc.nodes[0].count);
  ASSERT_TRUE(same);
  auto a = run_cluster_sim(sc);
  auto b = run_cluster_sim(*same);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(to_json(*a).dump(), to_json(*b).dump());
}

TEST(ClusterSimOpenbInventory, EveryNodeOfTheListAsItsRowSays) {
  auto nodes = load_openb_nodes(kOpenbNodes);
  ASSERT_TRUE(nodes) << nodes.error().message();
  ASSERT_EQ(nodes->size(), 1523u);
  int gpus = 0, cpu_only = 0;
  std::set<std::string> names;
  std::set<const hw::HostTopology*> shapes;
  for (const auto& n : *nodes) {
    gpus += static_cast<int>(n.topology->gpus().size());
    cpu_only += n.topology->gpus().empty() ? 1 : 0;
    names.insert(n.name);
    shapes.insert(n.topology.get());
  }
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(cpu_only, 310);
  EXPECT_EQ(names.size(), 1523u);
  EXPECT_LT(shapes.size(), 40u);  // servers of one shape share their topology
  // openb-node-0000: 32 CPUs, 256 GiB, no GPU, on two sockets.
  const auto& first = *nodes->front().topology;
  EXPECT_EQ(nodes->front().name, "openb-node-0000");
  EXPECT_EQ(first.total_cores(), 32);
  EXPECT_EQ(first.sockets().size(), 2u);
  EXPECT_TRUE(first.gpus().empty());
}

TEST(ClusterSimOpenbInventory, ANodeListScenarioRuns) {
  ClusterScenario sc = example("openb-inventory.yaml");
  sc.nodes[0].count = 200;  // the first 200 rows: 178 CPU-only nodes, 22 2-GPU P100 servers
  sc.trace->start_s = 10'040'000;
  sc.trace->max_pods = 300;
  sc.duration = 48 * 3600 * core::kNanosPerSecond;
  auto r = run_cluster_sim(sc);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->nodes, 200);
  EXPECT_EQ(r->total_gpus, 44);
  EXPECT_GT(r->pods_created, 100);
  EXPECT_GT(r->pods_completed, 0);
  sc.nodes[0].count = 2000;
  auto too_many = run_cluster_sim(sc);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message().find("1523"), std::string::npos)
      << too_many.error().message();
}

// A malformed node list is refused naming the file, the line and what is wrong.
TEST(ClusterSimOpenbInventory, AMalformedNodeListIsNamed) {
  const std::string dir = ::testing::TempDir();
  const auto refused = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + name;
    std::ofstream(path) << text;
    auto nodes = load_openb_nodes(path);
    EXPECT_FALSE(nodes) << name;
    return nodes ? std::string() : nodes.error().message();
  };
  EXPECT_NE(refused("no-model.csv", "sn,cpu_milli,memory_mib,gpu\nn0,32000,1024,0\n")
                .find("no column 'model' (expected the openb_node_list header)"),
            std::string::npos);
  EXPECT_NE(
      refused("short-row.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,1024,0,\nn1,32000\n")
          .find("short-row.csv:3: 2 fields, the header has 5"),
      std::string::npos);
  EXPECT_NE(refused("bad-number.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,lots,1024,0,\n")
                .find("bad-number.csv:2: expected cpu_milli >= 1000"),
            std::string::npos);
  EXPECT_NE(refused("empty.csv", "").find("empty file"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
