// tessera's topology JSON: exact round trip for every real file and preset, and errors that name
// the JSON path of what is wrong.
#include "tessera/hw/topology/json.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tessera/hw/topology/presets.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw {
namespace {

const std::string kData = std::string(TESSERA_SHARED_DATA_DIR) + "/topology/";

std::vector<HostTopology> every_topology() {
  std::vector<HostTopology> all;
  for (const char* f :
       {"hwloc/nvidiaDGX2.xml", "hwloc/power8gpudistances.xml", "hwloc/nvidia-dgx-gb10.xml",
        "nccl_azure/ndv2-topo.xml", "nccl_azure/ndv4-topo.xml", "nccl_azure/ndv5-topo.xml",
        "nccl_azure/ncv4-topo.xml"}) {
    auto t = load_topology_file(kData + f);
    EXPECT_TRUE(t) << f << ": " << t.error().message();
    if (t) all.push_back(std::move(*t));
  }
  // With the kubelet's reservations.
  TopologyOptions reserved;
  reserved.reserved_cpus = {0, 1};
  reserved.reserved_memory_bytes = {{3, std::int64_t{1} << 30}};
  auto r = load_topology_file(kData + "nccl_azure/ndv4-topo.xml", reserved);
  EXPECT_TRUE(r) << r.error().message();
  if (r) all.push_back(std::move(*r));
  for (const std::string& name : preset_names()) {
    auto t = preset(name, "node-007");
    EXPECT_TRUE(t) << name << ": " << t.error().message();
    if (t) all.push_back(std::move(*t));
  }
  return all;
}

TEST(TopologyJson, RoundTripIsExactForEveryFileAndPreset) {
  for (const HostTopology& t : every_topology()) {
    const nlohmann::json j = to_json(t);
    auto back = topology_from_json(j, "memory");
    ASSERT_TRUE(back) << t.source() << ": " << back.error().message();
    EXPECT_TRUE(*back == t) << t.source();
    EXPECT_EQ(to_json(*back), j) << t.source();
    // And through text.
    auto reparsed = topology_from_json(nlohmann::json::parse(j.dump()), "text");
    ASSERT_TRUE(reparsed);
    EXPECT_TRUE(*reparsed == t);
  }
}

TEST(TopologyJson, ShapeOfOneVertexAndEdge) {
  auto t = load_topology_file(kData + "hwloc/power8gpudistances.xml");
  ASSERT_TRUE(t);
  const nlohmann::json j = to_json(*t);
  EXPECT_EQ(j["hostname"], "drac-12.grenoble.grid5000.fr");
  EXPECT_EQ(j["nodes"][0], (nlohmann::json{{"id", 0}, {"kind", "machine"}, {"name", "machine"}}));
  const nlohmann::json& gpu = j["nodes"][t->gpus()[1]];
  EXPECT_EQ(gpu["kind"], "gpu");
  EXPECT_EQ(gpu["pci_bus_id"], "0003:01:00.0");
  EXPECT_EQ(gpu["numa"], 0);
  bool nvlink = false;
  for (const auto& e : j["edges"]) nvlink |= e.value("via", "") == "nvlink";
  EXPECT_TRUE(nvlink);
}

std::string error_of(const nlohmann::json& j) {
  auto r = topology_from_json(j, "edited.json");
  return r ? std::string("(loaded)") : r.error().message();
}

TEST(TopologyJson, ErrorsNameTheJsonPath) {
  auto t = preset("a100-2s", "node-001");
  ASSERT_TRUE(t);
  const nlohmann::json good = to_json(*t);
  const int gpu_id = t->gpus()[0];

  nlohmann::json j = good;
  j["nodes"][gpu_id]["numa"] = "zero";
  EXPECT_NE(error_of(j).find(fmt::format("nodes[{}].numa: expected an integer", gpu_id)),
            std::string::npos)
      << error_of(j);

  j = good;
  j["nodes"][gpu_id]["numa"] = 9;
  EXPECT_NE(error_of(j).find("NUMA node 9 does not exist"), std::string::npos) << error_of(j);

  j = good;
  j["nodes"][1]["name"] = "cpu0";
  EXPECT_NE(error_of(j).find("nodes[1].name: is \"cpu0\""), std::string::npos) << error_of(j);

  j = good;
  j["nodes"][gpu_id]["socket"] = 1;  // GPU 0 is on NUMA 0, socket 0
  EXPECT_NE(error_of(j).find(fmt::format("nodes[{}].socket", gpu_id)), std::string::npos)
      << error_of(j);

  j = good;
  j["nodes"][2]["memroy_bytes"] = 1;
  EXPECT_NE(error_of(j).find("nodes[2].memroy_bytes: unknown field"), std::string::npos);

  j = good;
  j["nodes"][3]["id"] = 7;
  EXPECT_NE(error_of(j).find("nodes[3].id"), std::string::npos);

  j = good;
  j["edges"].erase(j["edges"].begin());  // the machine's host edge to socket 0
  EXPECT_NE(error_of(j).find("edges: missing host 0 -> 1"), std::string::npos) << error_of(j);

  j = good;
  j["edges"].push_back({{"kind", "contain"}, {"from", 1}, {"to", gpu_id}});
  EXPECT_NE(error_of(j).find(fmt::format("contain 1 -> {} appears 1 times", gpu_id)),
            std::string::npos)
      << error_of(j);

  j = good;
  j["edges"][0]["kind"] = "near";
  EXPECT_NE(error_of(j).find("edges[0].kind: 'near'"), std::string::npos);

  j = good;
  j["nodes"][0]["kind"] = "socket";
  EXPECT_NE(error_of(j).find("nodes[0].kind"), std::string::npos);

  EXPECT_NE(error_of(nlohmann::json::array()).find("expected an object"), std::string::npos);
  EXPECT_NE(error_of({{"hostname", "x"},
                      {"nodes", nlohmann::json::array()},
                      {"edges", nlohmann::json::array()}})
                .find("nodes: expected an array"),
            std::string::npos);
}

TEST(TopologyJson, UnknownMemoryIsAbsentOrNull) {
  auto nccl = load_topology_file(kData + "nccl_azure/ndv5-topo.xml");
  ASSERT_TRUE(nccl) << nccl.error().message();
  const nlohmann::json written = to_json(*nccl);
  const nlohmann::json& numa = written["nodes"][nccl->numa_nodes()[0]];
  EXPECT_EQ(numa["kind"], "numa");
  EXPECT_FALSE(numa.contains("memory_bytes")) << numa.dump();
  EXPECT_FALSE(written.contains("numa_distances"));

  auto t = preset("a100-2s", "node-001");
  ASSERT_TRUE(t);
  nlohmann::json j = to_json(*t);
  j["nodes"][t->numa_nodes()[0]]["memory_bytes"] = nullptr;
  auto nulled = topology_from_json(j, "nulled.json");
  ASSERT_TRUE(nulled) << nulled.error().message();
  EXPECT_EQ(nulled->numa(0).local_memory_bytes, std::nullopt);
  EXPECT_EQ(nulled->numa(1).local_memory_bytes, t->numa(1).local_memory_bytes);
  EXPECT_FALSE(to_json(*nulled)["nodes"][t->numa_nodes()[0]].contains("memory_bytes"));

  // Assumed memory fills only what is unknown.
  HostTopology assumed = *nulled;
  ASSERT_TRUE(assumed.assume_numa_memory(std::int64_t{7} << 30));
  EXPECT_EQ(assumed.numa(0).local_memory_bytes, std::int64_t{7} << 30);
  EXPECT_EQ(assumed.numa(1).local_memory_bytes, t->numa(1).local_memory_bytes);
  EXPECT_FALSE(assumed.assume_numa_memory(0));
}

TEST(TopologyJson, ReservationsAndDistancesAreCheckedNamingWhatIsWrong) {
  auto t = preset("a100-2s", "node-001");  // 2 NUMA nodes; core group 0 holds CPU 0
  ASSERT_TRUE(t);
  const nlohmann::json good = to_json(*t);
  const int numa0 = t->numa_nodes()[0];
  const int numa1 = t->numa_nodes()[1];

  nlohmann::json j = good;
  j["numa_distances"] = {{10, 21}, {21, 10}};
  auto with = topology_from_json(j, "d.json");
  ASSERT_TRUE(with) << with.error().message();
  EXPECT_EQ(with->numa_distances(), (std::vector<std::int64_t>{10, 21, 21, 10}));

  j["numa_distances"] = {{10, 21}, {21, 10}, {21, 21}};
  EXPECT_NE(error_of(j).find("numa_distances: expected 2 rows of 2 distances (one per NUMA node), "
                             "got 3 rows"),
            std::string::npos)
      << error_of(j);
  j["numa_distances"] = {{10, 21}, {21}};
  EXPECT_NE(error_of(j).find("numa_distances[1]: expected 2 distances"), std::string::npos)
      << error_of(j);
  j["numa_distances"] = {{10, -1}, {21, 10}};
  EXPECT_NE(error_of(j).find("numa_distances[0][1]: expected a non-negative integer, got -1"),
            std::string::npos)
      << error_of(j);

  j = good;
  j["nodes"][numa0]["reserved_cpus"] = {0};
  EXPECT_NE(error_of(j).find("CPU 0 is reserved on numa0 but core group cores0.0 holds it"),
            std::string::npos)
      << error_of(j);
  j = good;
  j["nodes"][numa0]["reserved_cpus"] = {9999};
  j["nodes"][numa1]["reserved_cpus"] = {9999};
  EXPECT_NE(error_of(j).find("CPU 9999 is reserved on numa0 and on numa1"), std::string::npos)
      << error_of(j);
  j = good;
  j["nodes"][numa0]["reserved_memory_bytes"] = *t->numa(0).local_memory_bytes + 1;
  EXPECT_NE(error_of(j).find("numa0 has"), std::string::npos) << error_of(j);
  j["nodes"][numa0]["reserved_memory_bytes"] = -1;
  EXPECT_NE(error_of(j).find(fmt::format("nodes[{}].reserved_memory_bytes", numa0)),
            std::string::npos)
      << error_of(j);
}

TEST(TopologyJson, ZeroAndSharedUuidsAreReplacedByIdsFromTheBusIds) {
  auto t = preset("a100-2s", "node-001");
  ASSERT_TRUE(t);
  nlohmann::json j = to_json(*t);
  const auto& gpus = t->gpus();
  ASSERT_GE(gpus.size(), 4u);
  // An anonymised export: every UUID zeroed; the presets carry no bus ids, so all but one GPU
  // are given one here.
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    j["nodes"][gpus[k]]["uuid"] = "GPU-00000000-0000-0000-0000-000000000000";
    if (k != 3) j["nodes"][gpus[k]]["pci_bus_id"] = fmt::format("0000:{:02x}:00.0", 0x10 + k);
  }
  auto zeroed = topology_from_json(j, "anon.json");
  ASSERT_TRUE(zeroed) << zeroed.error().message();
  std::set<std::string> ids;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const TopoNode& g = zeroed->gpu(static_cast<int>(k));
    if (k == 3) {
      EXPECT_EQ(g.uuid, "GPU-index-3");
    } else {
      EXPECT_EQ(g.uuid, "GPU-pci-" + g.pci_bus_id);
    }
    ids.insert(g.uuid);
  }
  EXPECT_EQ(ids.size(), gpus.size());
  // One UUID copied to two GPUs names neither; the others keep theirs.
  j = to_json(*t);
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    j["nodes"][gpus[k]]["pci_bus_id"] = fmt::format("0000:{:02x}:00.0", 0x10 + k);
  }
  j["nodes"][gpus[0]]["uuid"] = "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6";
  j["nodes"][gpus[1]]["uuid"] = "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6";
  j["nodes"][gpus[2]]["uuid"] = "GPU-bb4648d3-e72b-4bac-a32f-4c9f3e4eb547";
  auto shared = topology_from_json(j, "copied.json");
  ASSERT_TRUE(shared) << shared.error().message();
  EXPECT_EQ(shared->gpu(0).uuid, "GPU-pci-" + shared->gpu(0).pci_bus_id);
  EXPECT_EQ(shared->gpu(1).uuid, "GPU-pci-" + shared->gpu(1).pci_bus_id);
  EXPECT_EQ(shared->gpu(2).uuid, "GPU-bb4648d3-e72b-4bac-a32f-4c9f3e4eb547");
}

TEST(TopologyJson, HandWrittenFileWithoutDerivedFieldsLoads) {
  // Only what is not derived: names of sockets/NUMA/core groups, a core group's os_index and the
  // sockets of core groups and GPUs may be left out.
  const nlohmann::json j = nlohmann::json::parse(R"({
    "hostname": "tiny",
    "nodes": [
      {"id": 0, "kind": "machine"},
      {"id": 1, "kind": "socket", "os_index": 0},
      {"id": 2, "kind": "numa", "socket": 0, "os_index": 0, "memory_bytes": 1024},
      {"id": 3, "kind": "core-group", "numa": 0, "cores": 2, "cpus": [0, 1]},
      {"id": 4, "kind": "gpu", "name": "gpu0", "numa": 0, "os_index": 0, "memory_bytes": 0},
      {"id": 5, "kind": "gpu", "name": "gpu1", "numa": 0, "os_index": 1, "memory_bytes": 0}
    ],
    "edges": [
      {"kind": "host", "from": 0, "to": 1}, {"kind": "contain", "from": 1, "to": 2},
      {"kind": "contain", "from": 2, "to": 3}, {"kind": "localized", "from": 4, "to": 2},
      {"kind": "localized", "from": 5, "to": 2}, {"kind": "nearby", "from": 4, "to": 5,
       "via": "nvlink"}
    ]})");
  auto t = topology_from_json(j, "tiny.json");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->source(), "json:tiny.json");
  EXPECT_EQ(t->core_group(0).name, "cores0.0");
  EXPECT_EQ(t->gpus().size(), 2u);
}

TEST(TopologyJson, LoadTopologyFileSniffsJson) {
  auto t = preset("rtx4090-2s", "node-042");
  ASSERT_TRUE(t);
  const auto path = std::filesystem::path(testing::TempDir()) / "topology_json_test.json";
  std::ofstream(path) << to_json(*t).dump(2);
  auto back = load_topology_file(path.string());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(*back == *t);

  TopologyOptions memory;
  memory.numa_memory_bytes = std::int64_t{1} << 30;  // every NUMA node's memory is known
  auto same = load_topology_file(path.string(), memory);
  ASSERT_TRUE(same) << same.error().message();
  EXPECT_TRUE(*same == *t);
  TopologyOptions reserved;
  reserved.reserved_cpus = {0};
  auto refused = load_topology_file(path.string(), reserved);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("give its NUMA nodes reserved_cpus"), std::string::npos)
      << refused.error().message();

  std::ofstream(path) << "{ \"hostname\": ";
  auto broken = load_topology_json(path.string());
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find("not valid JSON"), std::string::npos);

  std::ofstream(path) << "hostname: x";
  auto unknown = load_topology_file(path.string());
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("not a topology file"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera::hw
