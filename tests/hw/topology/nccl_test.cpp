// NCCL topology XMLs Azure ships for its GPU VMs (../shared/data/topology/nccl_azure). Expected
// values were read from the files by hand: <cpu numaid affinity>, <pci class="0x030200" busid>
// and the <pci class="0x060400"> switches they sit under.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw {
namespace {

const std::string kDir = std::string(TESSERA_SHARED_DATA_DIR) + "/topology/nccl_azure/";

std::vector<int> range(int first, int last) {
  std::vector<int> v;
  for (int i = first; i <= last; ++i) v.push_back(i);
  return v;
}

std::vector<int> cpus_of_numa(const HostTopology& t, int numa) {
  std::vector<int> cpus;
  for (int g : t.core_groups_of_numa(numa)) {
    const auto& c = t.core_group(g).cpus;
    cpus.insert(cpus.end(), c.begin(), c.end());
  }
  return cpus;
}

std::vector<std::string> bus_ids_of_numa(const HostTopology& t, int numa) {
  std::vector<std::string> ids;
  for (int k : t.gpus_of_numa(numa)) ids.push_back(t.gpu(k).pci_bus_id);
  return ids;
}

std::set<std::pair<std::string, std::string>> linked(const HostTopology& t,
                                                     const std::string& via) {
  std::set<std::pair<std::string, std::string>> out;
  for (const TopoEdge& e : t.edges()) {
    if (e.kind == TopoEdgeKind::kNearby && e.via == via) {
      out.insert({t.node(e.from).pci_bus_id, t.node(e.to).pci_bus_id});
    }
  }
  return out;
}

TEST(TopologyNccl, NdA100v4FourNumaTwoGpusPerSwitch) {
  TopologyOptions o;
  o.nccl_numa_per_socket = 2;  // 2x EPYC 7V12, 4 NUMA domains exposed to the VM
  auto t = load_nccl_xml(kDir + "ndv4-topo.xml", o);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->hostname(), "ndv4-topo");
  ASSERT_EQ(t->sockets().size(), 2u);
  ASSERT_EQ(t->numa_nodes().size(), 4u);
  EXPECT_EQ(t->numa(2).socket, 1);
  EXPECT_EQ(cpus_of_numa(*t, 0), range(0, 23));   // 00ffffff
  EXPECT_EQ(cpus_of_numa(*t, 1), range(24, 47));  // 0000ffff,ff000000
  EXPECT_EQ(cpus_of_numa(*t, 2), range(48, 71));  // 000000ff,ffff0000,00000000
  EXPECT_EQ(cpus_of_numa(*t, 3), range(72, 95));  // ffffff00,00000000,00000000
  EXPECT_EQ(t->total_cores(), 96);
  EXPECT_EQ(t->core_groups_of_numa(0).size(), 6u);  // 24 CPUs in groups of 4
  ASSERT_EQ(t->gpus().size(), 8u);
  EXPECT_EQ(bus_ids_of_numa(*t, 0), (std::vector<std::string>{"0003:00:00.0", "0004:00:00.0"}));
  EXPECT_EQ(bus_ids_of_numa(*t, 1), (std::vector<std::string>{"0001:00:00.0", "0002:00:00.0"}));
  EXPECT_EQ(bus_ids_of_numa(*t, 2), (std::vector<std::string>{"000d:00:00.0", "000e:00:00.0"}));
  EXPECT_EQ(bus_ids_of_numa(*t, 3), (std::vector<std::string>{"000b:00:00.0", "000c:00:00.0"}));
  EXPECT_EQ(linked(*t, "pcie-switch"),
            (std::set<std::pair<std::string, std::string>>{{"0003:00:00.0", "0004:00:00.0"},
                                                           {"0001:00:00.0", "0002:00:00.0"},
                                                           {"000d:00:00.0", "000e:00:00.0"},
                                                           {"000b:00:00.0", "000c:00:00.0"}}));
  // NUMA nodes 0-1 and 2-3 share sockets.
  int same_socket = 0;
  for (const TopoEdge& e : t->edges()) same_socket += e.via == "same-socket";
  EXPECT_EQ(same_socket, 2);
}

TEST(TopologyNccl, NdH100v5OneGpuPerSwitchNoLinks) {
  auto t = load_nccl_xml(kDir + "ndv5-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->numa_nodes().size(), 2u);
  ASSERT_EQ(t->sockets().size(), 2u);            // nccl_numa_per_socket 0: one socket per NUMA node
  EXPECT_EQ(cpus_of_numa(*t, 0), range(0, 47));  // 00000000,0000ffff,ffffffff
  EXPECT_EQ(cpus_of_numa(*t, 1), range(48, 95));  // ffffffff,ffff0000,00000000
  ASSERT_EQ(t->gpus().size(), 8u);
  EXPECT_EQ(bus_ids_of_numa(*t, 0), (std::vector<std::string>{"0001:00:00.0", "0002:00:00.0",
                                                              "0003:00:00.0", "0008:00:00.0"}));
  EXPECT_EQ(bus_ids_of_numa(*t, 1), (std::vector<std::string>{"0009:00:00.0", "000a:00:00.0",
                                                              "000b:00:00.0", "000c:00:00.0"}));
  EXPECT_TRUE(linked(*t, "pcie-switch").empty());  // each switch holds one GPU and one NIC
}

TEST(TopologyNccl, NdV2GpusDirectlyUnderTheCpuNicsAreNotGpus) {
  auto t = load_nccl_xml(kDir + "ndv2-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->numa_nodes().size(), 2u);
  EXPECT_EQ(cpus_of_numa(*t, 0), range(0, 19));   // 00000000,000fffff
  EXPECT_EQ(cpus_of_numa(*t, 1), range(20, 39));  // 000000ff,fff00000
  ASSERT_EQ(t->gpus().size(), 8u);                // the 0x020700 NIC is not one
  EXPECT_EQ(bus_ids_of_numa(*t, 1), (std::vector<std::string>{"0005:00:00.0", "0006:00:00.0",
                                                              "0007:00:00.0", "0008:00:00.0"}));
  EXPECT_TRUE(linked(*t, "pcie-switch").empty());
}

TEST(TopologyNccl, NcA100v4SelfNvlinksAreIgnoredAndDevNumbersKept) {
  auto t = load_nccl_xml(kDir + "ncv4-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->numa_nodes().size(), 4u);
  ASSERT_EQ(t->gpus().size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(t->gpu(k).os_index, k);  // <gpu dev="k">
    EXPECT_EQ(t->gpu(k).numa, k);
  }
  EXPECT_TRUE(linked(*t, "nvlink").empty());  // each <nvlink target> is the GPU's own bus id
}

TEST(TopologyNccl, GraphFileIsRejectedSayingWhatItIs) {
  for (auto r :
       {load_nccl_xml(kDir + "ncv4-graph.xml"), load_topology_file(kDir + "ncv4-graph.xml")}) {
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("NCCL graph file"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("NCCL_TOPO_FILE"), std::string::npos);
  }
}

TEST(TopologyNccl, NvlinksBetweenGpusAndToAnNvswitch) {
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" affinity="0000000f">
    <pci busid="0000:01:00.0" class="0x030200"><gpu dev="0">
      <nvlink target="0000:02:00.0" count="4" tclass="0x030200"/>
      <nvlink target="fffffff:ffff:ff" count="6" tclass="0x068000"/></gpu></pci>
    <pci busid="0000:02:00.0" class="0x030200"><gpu dev="1">
      <nvlink target="0000:01:00.0" count="4" tclass="0x030200"/></gpu></pci>
    <pci busid="0000:03:00.0" class="0x030200"><gpu dev="2">
      <nvlink target="fffffff:ffff:ff" count="6" tclass="0x068000"/></gpu></pci>
  </cpu>
</system>)";
  auto t = parse_nccl_xml(xml, "inline.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(linked(*t, "nvlink"),
            (std::set<std::pair<std::string, std::string>>{{"0000:01:00.0", "0000:02:00.0"}}));
  EXPECT_EQ(linked(*t, "nvswitch"),
            (std::set<std::pair<std::string, std::string>>{{"0000:01:00.0", "0000:03:00.0"}}));
}

TEST(TopologyNccl, MalformedFilesNameWhatIsWrong) {
  const auto message = [](std::string_view xml) {
    auto r = parse_nccl_xml(xml, "t.xml");
    return r ? std::string("(loaded)") : r.error().message();
  };
  EXPECT_NE(message("<system><cpu numaid=\"0\" affinity=\"ff\">").find("not well-formed XML"),
            std::string::npos);
  EXPECT_NE(message("<system><cpu affinity=\"ff\"/></system>").find("numaid '(missing)'"),
            std::string::npos);
  EXPECT_NE(message("<system><cpu numaid=\"0\" affinity=\"fg\"/></system>").find("affinity 'fg'"),
            std::string::npos);
  EXPECT_NE(message("<system><cpu numaid=\"0\" affinity=\"123456789\"/></system>")
                .find("not a Linux cpumask"),
            std::string::npos);
  EXPECT_NE(message("<system><cpu numaid=\"0\" affinity=\"1\"/><cpu numaid=\"0\" "
                    "affinity=\"2\"/></system>")
                .find("appears twice"),
            std::string::npos);
  EXPECT_NE(message("<system/>").find("no <cpu>"), std::string::npos);
  EXPECT_NE(message("<topology/>").find("<system>"), std::string::npos);
  EXPECT_NE(message("<system><cpu numaid=\"0\"/></system>").find("no affinity"), std::string::npos);
}

TEST(TopologyNccl, NumaMemoryIsUnknownUnlessGiven) {
  auto t = load_nccl_xml(kDir + "ndv4-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(t->numa(j).local_memory_bytes, std::nullopt);
  EXPECT_EQ(t->total_memory_bytes(), std::nullopt);
  EXPECT_TRUE(t->numa_distances().empty());  // NCCL files carry none

  TopologyOptions o;
  o.numa_memory_bytes = std::int64_t{220} << 30;
  auto given = load_nccl_xml(kDir + "ndv4-topo.xml", o);
  ASSERT_TRUE(given) << given.error().message();
  for (int j = 0; j < 4; ++j) EXPECT_EQ(given->numa(j).local_memory_bytes, std::int64_t{220} << 30);
  EXPECT_EQ(given->total_memory_bytes(), std::int64_t{880} << 30);

  o.numa_memory_bytes = 0;
  auto zero = load_nccl_xml(kDir + "ndv4-topo.xml", o);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message().find("give a positive size"), std::string::npos)
      << zero.error().message();
}

TEST(TopologyNccl, GpuModelFromThePciDeviceId) {
  // NC A100 v4's <pci ... device="0x20b5">: pci.ids' "GA100 [A100 PCIe 80GB]".
  auto t = load_nccl_xml(kDir + "ncv4-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(t->gpu(k).model, "NVIDIA A100 PCIe 80GB");
  // ND A100 v4's file gives no device id: the model stays unknown.
  auto nd = load_nccl_xml(kDir + "ndv4-topo.xml");
  ASSERT_TRUE(nd) << nd.error().message();
  EXPECT_EQ(nd->gpu(0).model, "");
  // An id the table does not know, or one that is not hex, leaves it empty too.
  auto other = parse_nccl_xml(R"(<system><cpu numaid="0" affinity="f">
      <pci busid="0000:01:00.0" class="0x030200" vendor="0x10de" device="0x0001"/>
      <pci busid="0000:02:00.0" class="0x030200" vendor="0x10de" device="H100"/></cpu></system>)",
                              "other.xml");
  ASSERT_TRUE(other) << other.error().message();
  EXPECT_EQ(other->gpu(0).model, "");
  EXPECT_EQ(other->gpu(1).model, "");
}

TEST(TopologyNccl, ReservedCpusLeaveTheCoreGroupsAndReservedMemoryIsKept) {
  TopologyOptions o;
  o.nccl_numa_per_socket = 2;
  o.numa_memory_bytes = std::int64_t{220} << 30;
  o.reserved_cpus = {0, 1, 48};
  o.reserved_memory_bytes = {{0, std::int64_t{4} << 30}, {2, std::int64_t{1} << 30}};
  auto t = load_nccl_xml(kDir + "ndv4-topo.xml", o);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->numa(0).reserved_cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->numa(0).reserved_memory_bytes, std::int64_t{4} << 30);
  EXPECT_EQ(cpus_of_numa(*t, 0), range(2, 23));  // 22 CPUs: 5 groups of 4 and one of 2
  EXPECT_EQ(t->core_groups_of_numa(0).size(), 6u);
  EXPECT_EQ(t->numa(1).reserved_cpus, std::vector<int>{});
  EXPECT_EQ(t->numa(2).reserved_cpus, std::vector<int>{48});
  EXPECT_EQ(t->numa(2).reserved_memory_bytes, std::int64_t{1} << 30);
  EXPECT_EQ(t->total_cores(), 93);
}

TEST(TopologyNccl, ReservationsTheHostCannotHoldAreErrors) {
  const auto message = [](const TopologyOptions& o) {
    auto r = load_nccl_xml(kDir + "ndv4-topo.xml", o);
    return r ? std::string("(loaded)") : r.error().message();
  };
  TopologyOptions cpu;
  cpu.reserved_cpus = {96};
  EXPECT_NE(message(cpu).find("reserved CPU 96 is not one of this host's 96 CPUs"),
            std::string::npos)
      << message(cpu);
  TopologyOptions numa;
  numa.reserved_memory_bytes = {{7, 1}};
  EXPECT_NE(message(numa).find("memory is reserved on NUMA node 7"), std::string::npos)
      << message(numa);
  TopologyOptions too_much;
  too_much.numa_memory_bytes = std::int64_t{1} << 30;
  too_much.reserved_memory_bytes = {{0, std::int64_t{2} << 30}};
  EXPECT_NE(message(too_much).find("numa0 has 1073741824 bytes of memory; 2147483648 are reserved"),
            std::string::npos)
      << message(too_much);
}

TEST(TopologyNccl, LoadTopologyFileSniffsNccl) {
  auto t = load_topology_file(kDir + "ndv4-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_TRUE(t->source().starts_with("nccl-xml:"));
  EXPECT_EQ(t->gpus().size(), 8u);
}

}  // namespace
}  // namespace tessera::hw
