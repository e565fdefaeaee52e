// hwloc XML exports of real machines (../shared/data/topology/hwloc, hwloc's own regression
// inputs) loaded through libhwloc. Every expected number below was read from the XML files by
// hand: Package/NUMANode/Core/PU objects, PCIDev objects of class 0302 [10de:...], their bus ids,
// OS-device info and the NVLinkBandwidth matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw {
namespace {

const std::string kDir = std::string(TESSERA_SHARED_DATA_DIR) + "/topology/hwloc/";

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replaces the first `from` in `text` (which must hold it) by `to`.
void replace(std::string& text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

std::vector<std::string> bus_ids_of_numa(const HostTopology& t, int numa) {
  std::vector<std::string> ids;
  for (int k : t.gpus_of_numa(numa)) ids.push_back(t.gpu(k).pci_bus_id);
  return ids;
}

// GPU pairs (by index) linked by `via`.
std::set<std::pair<int, int>> links(const HostTopology& t, const std::string& via) {
  std::vector<int> gpu_of_node(t.nodes().size(), -1);
  for (std::size_t k = 0; k < t.gpus().size(); ++k) gpu_of_node[t.gpus()[k]] = static_cast<int>(k);
  std::set<std::pair<int, int>> out;
  for (const TopoEdge& e : t.edges()) {
    if (e.kind == TopoEdgeKind::kNearby && e.via == via) {
      out.insert({gpu_of_node[e.from], gpu_of_node[e.to]});
    }
  }
  return out;
}

TEST(TopologyHwloc, Dgx2SocketsNumaCoresAndSixteenV100) {
  auto t = load_hwloc_xml(kDir + "nvidiaDGX2.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->hostname(), "nvidiaDGX2");  // the file carries no HostName info
  EXPECT_EQ(t->source(), "hwloc-xml:" + kDir + "nvidiaDGX2.xml");
  ASSERT_EQ(t->sockets().size(), 2u);
  EXPECT_EQ(t->socket(0).os_index, 0);
  EXPECT_EQ(t->socket(1).os_index, 1);
  ASSERT_EQ(t->numa_nodes().size(), 2u);
  EXPECT_EQ(t->numa(0).local_memory_bytes, 810234351616);
  EXPECT_EQ(t->numa(1).local_memory_bytes, 811737923584);
  EXPECT_EQ(t->numa(1).socket, 1);
  // Reduced CPU set: cores 0 and 1 of each package, one PU each (0, 1 and 24, 25).
  ASSERT_EQ(t->core_groups().size(), 2u);
  EXPECT_EQ(t->core_group(0).cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->core_group(1).cpus, (std::vector<int>{24, 25}));
  EXPECT_EQ(t->total_cores(), 4);

  ASSERT_EQ(t->gpus().size(), 16u);
  EXPECT_EQ(
      bus_ids_of_numa(*t, 0),
      (std::vector<std::string>{"0000:34:00.0", "0000:36:00.0", "0000:39:00.0", "0000:3b:00.0",
                                "0000:57:00.0", "0000:59:00.0", "0000:5c:00.0", "0000:5e:00.0"}));
  EXPECT_EQ(
      bus_ids_of_numa(*t, 1),
      (std::vector<std::string>{"0000:b7:00.0", "0000:b9:00.0", "0000:bc:00.0", "0000:be:00.0",
                                "0000:e0:00.0", "0000:e2:00.0", "0000:e5:00.0", "0000:e7:00.0"}));
  EXPECT_EQ(t->gpu(0).model, "Tesla V100-SXM3-32GB-H");
  EXPECT_EQ(t->gpu(0).uuid, "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6");
  EXPECT_EQ(t->gpu(15).uuid, "GPU-bb4648d3-e72b-4bac-a32f-4c9f3e4eb547");
  EXPECT_EQ(t->gpu(15).os_index, 15);    // nvml15
  EXPECT_EQ(t->gpu(0).memory_bytes, 0);  // NVML OS devices carry no memory size

  // NVLinkBandwidth (28 objects): nvml0-7 each link to the six NVSwitches PCIDev 449, 703, 576,
  // 317, 637, 381 and nvml8-15 to the other six; no switch-to-switch entries. So two 8-GPU
  // NVSwitch cliques, which also cover every pair that shares a PLX tree.
  std::set<std::pair<int, int>> cliques;
  for (int board = 0; board < 2; ++board) {
    for (int a = 0; a < 8; ++a) {
      for (int b = a + 1; b < 8; ++b) cliques.insert({board * 8 + a, board * 8 + b});
    }
  }
  EXPECT_EQ(links(*t, "nvswitch"), cliques);
  EXPECT_TRUE(links(*t, "pcie-switch").empty());
  EXPECT_TRUE(links(*t, "nvlink").empty());
}

// The same file without its NVLink matrix: what is left is the PCIe tree.
TEST(TopologyHwloc, Dgx2PcieSwitchTreesWithoutTheNvlinkMatrix) {
  std::ifstream in(kDir + "nvidiaDGX2.xml");
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t from = xml.find("<distances2hetero");
  const std::string end = "</distances2hetero>";
  const std::size_t to = xml.find(end);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  xml.erase(from, to + end.size() - from);
  auto t = parse_hwloc_xml(xml, "dgx2-without-nvlink.xml");
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->gpus().size(), 16u);
  // Four PLX trees of four GPUs each (below root ports 2b, 4e, ae, d7): every pair inside a tree
  // shares a switch, no pair across trees does.
  std::set<std::pair<int, int>> expected;
  for (int tree = 0; tree < 4; ++tree) {
    for (int a = 0; a < 4; ++a) {
      for (int b = a + 1; b < 4; ++b) expected.insert({tree * 4 + a, tree * 4 + b});
    }
  }
  EXPECT_EQ(links(*t, "pcie-switch"), expected);
  EXPECT_TRUE(links(*t, "nvswitch").empty());
}

TEST(TopologyHwloc, Power8NvlinkPairsFromTheDistanceMatrix) {
  auto t = load_hwloc_xml(kDir + "power8gpudistances.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->hostname(), "drac-12.grenoble.grid5000.fr");
  ASSERT_EQ(t->sockets().size(), 2u);
  ASSERT_EQ(t->numa_nodes().size(), 2u);
  EXPECT_EQ(t->numa(0).local_memory_bytes, 68556816384);
  EXPECT_EQ(t->numa(1).local_memory_bytes, 68450713600);
  // NUMA 0 cpuset 0x03030303: four cores of two PUs; NUMA 1: 0x00000303,0x03030000,,0x0.
  ASSERT_EQ(t->core_groups().size(), 2u);
  EXPECT_EQ(t->core_group(0).cores, 4);
  EXPECT_EQ(t->core_group(0).cpus, (std::vector<int>{0, 1, 8, 9, 16, 17, 24, 25}));
  EXPECT_EQ(t->core_group(1).cpus, (std::vector<int>{80, 81, 88, 89, 96, 97, 104, 105}));

  ASSERT_EQ(t->gpus().size(), 4u);
  EXPECT_EQ(bus_ids_of_numa(*t, 0), (std::vector<std::string>{"0002:01:00.0", "0003:01:00.0"}));
  EXPECT_EQ(bus_ids_of_numa(*t, 1), (std::vector<std::string>{"000a:01:00.0", "000b:01:00.0"}));
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(t->gpu(k).os_index, k);  // cuda0..cuda3
    EXPECT_EQ(t->gpu(k).model, "Tesla P100-SXM2-16GB");
    EXPECT_EQ(t->gpu(k).memory_bytes, 16671616LL * 1024);  // CUDAGlobalMemorySize 16671616KiB
  }
  EXPECT_EQ(t->gpu(2).uuid, "GPU-ea919830-8251-6a30-e379-daeb01448779");
  // NVLinkBandwidth: nvml0-nvml1 and nvml2-nvml3 at 40000; the GPU-package entries are no GPU
  // links. Each GPU sits under its own host bridge: no shared switch.
  EXPECT_EQ(links(*t, "nvlink"), (std::set<std::pair<int, int>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(links(*t, "pcie-switch").empty());
}

TEST(TopologyHwloc, Gb10OneSocketTwentyCoresNoPciGpu) {
  auto t = load_hwloc_xml(kDir + "nvidia-dgx-gb10.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->hostname(), "cfarm107");
  ASSERT_EQ(t->sockets().size(), 1u);
  EXPECT_EQ(t->socket(0).os_index, 36);
  ASSERT_EQ(t->numa_nodes().size(), 1u);
  EXPECT_EQ(t->numa(0).local_memory_bytes, 128520671232);
  EXPECT_EQ(t->total_cores(), 20);
  EXPECT_EQ(t->core_groups().size(), 5u);  // 20 cores in groups of 4
  EXPECT_TRUE(t->gpus().empty());          // the export has no PCI objects
}

TEST(TopologyHwloc, CoresPerGroupCutsTheLastGroupShort) {
  TopologyOptions o;
  o.cores_per_group = 6;
  auto t = load_hwloc_xml(kDir + "nvidia-dgx-gb10.xml", o);
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->core_groups().size(), 4u);
  EXPECT_EQ(t->core_group(3).cores, 2);
  EXPECT_EQ(t->core_group(3).cpus, (std::vector<int>{18, 19}));
  EXPECT_EQ(t->core_group(1).name, "cores0.1");
}

TEST(TopologyHwloc, NumaDistancesAreHwlocsNumaLatency) {
  // <distances2 type="NUMANode" kind="5" name="NUMALatency">: 10 21 21 10 and 10 40 40 10.
  auto dgx2 = load_hwloc_xml(kDir + "nvidiaDGX2.xml");
  ASSERT_TRUE(dgx2) << dgx2.error().message();
  EXPECT_EQ(dgx2->numa_distances(), (std::vector<std::int64_t>{10, 21, 21, 10}));
  auto power8 = load_hwloc_xml(kDir + "power8gpudistances.xml");
  ASSERT_TRUE(power8) << power8.error().message();
  EXPECT_EQ(power8->numa_distances(), (std::vector<std::int64_t>{10, 40, 40, 10}));
  auto gb10 = load_hwloc_xml(kDir + "nvidia-dgx-gb10.xml");  // one NUMA node, no matrix
  ASSERT_TRUE(gb10) << gb10.error().message();
  EXPECT_TRUE(gb10->numa_distances().empty());

  // hwloc 1.x's <distances> (a hand-written v1 export) are imported as an unnamed latency matrix.
  auto v1 =
      load_hwloc_xml(std::string(TESSERA_SOURCE_DIR) + "/tests/hw/topology/v1/numa-distances.xml");
  ASSERT_TRUE(v1) << v1.error().message();
  EXPECT_EQ(v1->numa_distances(), (std::vector<std::int64_t>{10, 22, 22, 10}));

  // A matrix over NUMA node 0 alone leaves node 1 without distances: none are kept.
  std::string xml = read(kDir + "power8gpudistances.xml");
  replace(xml, R"(nbobjs="2" kind="5" name="NUMALatency" indexing="os">
    <indexes length="4">0 1 </indexes>
    <u64values length="12">10 40 40 10 </u64values>)",
          R"(nbobjs="1" kind="5" name="NUMALatency" indexing="os">
    <indexes length="2">0 </indexes>
    <u64values length="3">10 </u64values>)");
  auto partial = parse_hwloc_xml(xml, "partial.xml");
  ASSERT_TRUE(partial) << partial.error().message();
  EXPECT_TRUE(partial->numa_distances().empty());

  // hwloc refuses a matrix of the wrong size without saying why; the error names it.
  xml = read(kDir + "power8gpudistances.xml");
  replace(xml, R"(<u64values length="12">10 40 40 10 </u64values>)",
          R"(<u64values length="9">10 40 40 </u64values>)");
  auto short_matrix = parse_hwloc_xml(xml, "short.xml");
  ASSERT_FALSE(short_matrix);
  EXPECT_EQ(short_matrix.error().message(),
            "short.xml: hwloc could not import it as an hwloc XML topology: <distances2 "
            "name=\"NUMALatency\"> is a distance matrix of 2 objects with 2 indexes and 3 values; "
            "it needs 2 indexes and 4 values (2 x 2)");
}

TEST(TopologyHwloc, GpuModelFromThePciDeviceIdWithoutOsDevices) {
  // The DGX-2 export without its NVML OS devices (and the NVLink matrix that names them): the
  // GPUs' PCI ids [10de:1db8] still name them, as pci.ids' "GV100GL [Tesla V100 SXM3 32GB]".
  std::string xml = read(kDir + "nvidiaDGX2.xml");
  const std::string end = "</distances2hetero>";
  const std::size_t hetero = xml.find("<distances2hetero");
  ASSERT_NE(hetero, std::string::npos);
  xml.erase(hetero, xml.find(end) + end.size() - hetero);
  const std::string osdev = "<object type=\"OSDev\"";
  for (std::size_t at = xml.find(osdev); at != std::string::npos; at = xml.find(osdev, at)) {
    const std::string close = "</object>";
    xml.erase(at, xml.find(close, at) + close.size() - at);
  }
  auto t = parse_hwloc_xml(xml, "dgx2-without-osdevs.xml");
  ASSERT_TRUE(t) << t.error().message();
  ASSERT_EQ(t->gpus().size(), 16u);
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(t->gpu(k).model, "NVIDIA Tesla V100 SXM3 32GB");
    EXPECT_EQ(t->gpu(k).uuid, "");
  }
}

TEST(TopologyHwloc, ZeroLocalMemoryIsUnknown) {
  std::string xml = read(kDir + "nvidia-dgx-gb10.xml");
  replace(xml, R"(local_memory="128520671232")", R"(local_memory="0")");
  auto t = parse_hwloc_xml(xml, "gb10-no-memory.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->numa(0).local_memory_bytes, std::nullopt);
  TopologyOptions o;
  o.numa_memory_bytes = std::int64_t{64} << 30;
  auto given = parse_hwloc_xml(xml, "gb10-no-memory.xml", o);
  ASSERT_TRUE(given) << given.error().message();
  EXPECT_EQ(given->numa(0).local_memory_bytes, std::int64_t{64} << 30);
  // A size hwloc did read is kept.
  auto real = load_hwloc_xml(kDir + "nvidia-dgx-gb10.xml", o);
  ASSERT_TRUE(real) << real.error().message();
  EXPECT_EQ(real->numa(0).local_memory_bytes, 128520671232);
}

TEST(TopologyHwloc, AReservedCpuTakesItsWholeCoreOutOfTheGroups) {
  TopologyOptions o;
  o.reserved_cpus = {0};  // core 0 of NUMA node 0 is PUs 0 and 1
  o.reserved_memory_bytes = {{1, std::int64_t{2} << 30}};
  auto t = load_hwloc_xml(kDir + "power8gpudistances.xml", o);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->numa(0).reserved_cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->numa(0).reserved_memory_bytes, 0);
  ASSERT_EQ(t->core_groups_of_numa(0).size(), 1u);
  EXPECT_EQ(t->core_group(0).cores, 3);
  EXPECT_EQ(t->core_group(0).cpus, (std::vector<int>{8, 9, 16, 17, 24, 25}));
  EXPECT_EQ(t->numa(1).reserved_memory_bytes, std::int64_t{2} << 30);
  EXPECT_EQ(t->numa(1).reserved_cpus, std::vector<int>{});

  o.reserved_cpus = {2};  // not a PU of this reduced export
  auto missing = load_hwloc_xml(kDir + "power8gpudistances.xml", o);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("reserved CPU 2 is not one of this host's 16 CPUs"),
            std::string::npos)
      << missing.error().message();
}

TEST(TopologyHwloc, BadInputIsAnErrorNamingTheOrigin) {
  auto garbage = parse_hwloc_xml("<topology version=\"2.0\"><object type=", "broken.xml");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message().find("broken.xml"), std::string::npos);
  EXPECT_EQ(garbage.error().domain(), core::Domain::kTopology);

  // hwloc 2.9 dereferences NULL on an object with a cpuset but no complete_cpuset (the fuzzer
  // found it); it is refused before hwloc sees it.
  std::ifstream in(kDir + "power8gpudistances.xml");
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = xml.find(" complete_cpuset=", xml.find("type=\"L3Cache\""));
  ASSERT_NE(at, std::string::npos);
  xml.replace(at, 17, " other_cpuset=");
  auto half_sets = parse_hwloc_xml(xml, "p8.xml");
  ASSERT_FALSE(half_sets);
  EXPECT_NE(half_sets.error().message().find("L3Cache object (gp_index 8) has 3 of cpuset"),
            std::string::npos)
      << half_sets.error().message();

  auto not_hwloc = parse_hwloc_xml("<system/>", "nccl.xml");
  ASSERT_FALSE(not_hwloc);
  EXPECT_NE(not_hwloc.error().message().find("root element is <system>"), std::string::npos);

  auto missing = load_hwloc_xml(kDir + "no-such-file.xml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);

  TopologyOptions o;
  o.cores_per_group = 0;
  auto bad_options = load_hwloc_xml(kDir + "nvidiaDGX2.xml", o);
  ASSERT_FALSE(bad_options);
  EXPECT_NE(bad_options.error().message().find("cores per group"), std::string::npos);
}

// One changed byte of power8gpudistances.xml (a nodeset of ",x00000002") make libhwloc 2.9 fail
// an assertion in hwloc_bitmap_sscanf and abort inside hwloc_topology_load. The import runs in a
// child process, so the crash is an error naming the file and the signal, and this process goes
// on loading other files.
TEST(TopologyHwloc, AFileThatCrashesHwlocIsAnError) {
  const std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/tests/hw/topology/malformed/" + "power8-crash.xml";
  for (const auto& crashed : {load_hwloc_xml(path), load_topology_file(path)}) {
    ASSERT_FALSE(crashed);
    EXPECT_EQ(crashed.error().domain(), core::Domain::kTopology);
    EXPECT_EQ(crashed.error().code(), core::Code::kParse);
    EXPECT_EQ(
        crashed.error().message().find(path + ": hwloc crashed (SIGABRT) importing this file"), 0U)
        << crashed.error().message();
    // hwloc's own assertion, from the child's stderr.
    EXPECT_NE(crashed.error().message().find("importing this file (it printed: "),
              std::string::npos)
        << crashed.error().message();
  }
  auto after = load_hwloc_xml(kDir + "power8gpudistances.xml");
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(after->gpus().size(), 4U);
}

// Topology files are read up to 64 MiB: a path that never ends is refused, not read forever.
TEST(TopologyHwloc, TopologyFilesAreReadUpToTheirCap) {
  auto endless = load_topology_file("/dev/zero");
  ASSERT_FALSE(endless);
  EXPECT_EQ(endless.error().message(),
            "topology file '/dev/zero' is larger than 64 MiB, the most tessera reads from one "
            "topology file");
  auto folder = load_hwloc_xml(kDir);
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.error().message().find("is a directory"), std::string::npos);
}

TEST(TopologyHwloc, LoadTopologyFileSniffsHwloc) {
  auto t = load_topology_file(kDir + "power8gpudistances.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->gpus().size(), 4u);
  EXPECT_TRUE(t->source().starts_with("hwloc-xml:"));
}

// This machine through hwloc: whatever it has, the graph obeys the builder's rules and holds
// every CPU hwloc reports.
TEST(TopologyHwloc, DiscoverHostBuildsAGraphOfThisMachine) {
  auto t = discover_host();
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->source(), "hwloc:live");
  EXPECT_FALSE(t->hostname().empty());
  EXPECT_GE(t->sockets().size(), 1u);
  EXPECT_GE(t->total_cores(), 1);
  std::set<int> cpus;
  for (int g = 0; g < static_cast<int>(t->core_groups().size()); ++g) {
    for (int c : t->core_group(g).cpus) EXPECT_TRUE(cpus.insert(c).second) << "cpu " << c;
  }
  EXPECT_GE(static_cast<int>(cpus.size()), t->total_cores());
}

}  // namespace
}  // namespace tessera::hw
