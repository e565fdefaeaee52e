// Generated servers: the named presets' shapes and generate()'s checks.
#include "tessera/hw/topology/presets.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tessera::hw {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

int nearby(const HostTopology& t, const std::string& via) {
  int n = 0;
  for (const TopoEdge& e : t.edges()) n += e.kind == TopoEdgeKind::kNearby && e.via == via;
  return n;
}

TEST(TopologyPresets, Rtx4090TwoSocketsFourGpusPerNuma) {
  auto t = preset("rtx4090-2s", "node-007");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->hostname(), "node-007");
  EXPECT_EQ(t->source(), "preset:rtx4090-2s");
  ASSERT_EQ(t->sockets().size(), 2u);
  ASSERT_EQ(t->numa_nodes().size(), 2u);
  ASSERT_EQ(t->gpus().size(), 8u);
  for (int j = 0; j < 2; ++j) {
    EXPECT_EQ(t->gpus_of_numa(j).size(), 4u);
    EXPECT_EQ(t->core_groups_of_numa(j).size(), 8u);  // 32 cores in groups of 4
  }
  EXPECT_EQ(t->gpu(5).socket, 1);
  EXPECT_EQ(t->gpu(0).model, "RTX-4090-24GB");
  EXPECT_EQ(t->gpu(0).memory_bytes, 24 * kGiB);
  // Core 0's threads are CPUs 0 and 64 (64 cores in the machine); core group 0 holds cores 0-3.
  EXPECT_EQ(t->core_group(0).cpus, (std::vector<int>{0, 1, 2, 3, 64, 65, 66, 67}));
  EXPECT_EQ(t->total_cores(), 64);
  EXPECT_EQ(nearby(*t, "pcie-switch") + nearby(*t, "nvswitch") + nearby(*t, "nvlink"), 0);
  EXPECT_EQ(nearby(*t, "same-socket"), 0);
}

TEST(TopologyPresets, Rtx4090TwoNumaPerSocket) {
  auto t = preset("rtx4090-2s2n", "n");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->numa_nodes().size(), 4u);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(t->gpus_of_numa(j).size(), 2u);
  EXPECT_EQ(t->numa(3).socket, 1);
  EXPECT_EQ(nearby(*t, "same-socket"), 2);
  EXPECT_EQ(t->total_cores(), 64);
}

TEST(TopologyPresets, A100EveryPairOnNvswitch) {
  auto t = preset("a100-2s", "n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->gpus().size(), 8u);
  EXPECT_EQ(nearby(*t, "nvswitch"), 28);  // 8 choose 2
  EXPECT_EQ(t->gpu(0).model, "A100-SXM4-80GB");
  EXPECT_EQ(t->gpu(0).memory_bytes, 80 * kGiB);
  EXPECT_EQ(t->total_memory_bytes(), std::optional<std::int64_t>(1024 * kGiB));
  EXPECT_EQ(t->total_cores(), 128);
}

TEST(TopologyPresets, DgxA100Nps4GpuPairsOnEverySecondNode) {
  auto t = preset("a100-2s4n", "n");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->numa_nodes().size(), 8u);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(t->gpus_of_numa(j).size(), j % 2 == 1 ? 2u : 0u);
  EXPECT_EQ(nearby(*t, "same-socket"), 12);  // 4 choose 2, per socket
  EXPECT_EQ(nearby(*t, "nvswitch"), 28);
}

TEST(TopologyPresets, H100) {
  auto t = preset("h100-2s", "n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->gpus().size(), 8u);
  EXPECT_EQ(t->gpu(0).model, "H100-SXM5-80GB");
  EXPECT_EQ(t->total_cores(), 112);
}

TEST(TopologyPresets, UnknownNameListsTheKnownOnes) {
  auto r = preset("rtx3090", "n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), core::Code::kNotFound);
  for (const std::string& name : preset_names()) {
    EXPECT_NE(r.error().message().find(name), std::string::npos);
  }
}

TEST(TopologyPresets, GenerateSwitchesAndChecks) {
  ServerShape s;
  s.name = "gen";
  s.sockets = 1;
  s.gpus_per_numa = 4;
  s.cores_per_numa = 10;
  s.cores_per_group = 4;
  s.threads_per_core = 1;
  s.gpus_per_switch = 2;
  auto t = generate(s);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->source(), "generated:gen");
  EXPECT_EQ(nearby(*t, "pcie-switch"), 2);  // (0,1) and (2,3)
  ASSERT_EQ(t->core_groups().size(), 3u);   // 4 + 4 + 2 cores
  EXPECT_EQ(t->core_group(2).cores, 2);
  EXPECT_EQ(t->core_group(2).cpus, (std::vector<int>{8, 9}));

  ServerShape bad = s;
  bad.sockets = 0;
  auto r = generate(bad);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("sockets is 0"), std::string::npos);
  bad = s;
  bad.gpus_by_numa = {1, 2};
  r = generate(bad);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("gpus_by_numa has 2 entries for 1 NUMA nodes"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::hw
