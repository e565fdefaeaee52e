// The NodeResourceTopology export, checked against the CRD's own schema and the upstream instance
// example (../shared/data/k8s/noderesourcetopology), and for what it counts.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "agent_topologies.hpp"
#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/hw/topology/sources.hpp"
#include "tessera/k8s/node_resource_topology.hpp"

namespace tessera::k8s {
namespace {

using testing::kGiB;
using testing::small_server;

const std::string kNrtDir = std::string(TESSERA_SHARED_DATA_DIR) + "/k8s/noderesourcetopology/";

// The openAPIV3Schema of the CRD's v1alpha2 version.
YAML::Node v1alpha2_schema(const YAML::Node& crd) {
  for (const auto& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() == "v1alpha2") return v["schema"]["openAPIV3Schema"];
  }
  ADD_FAILURE() << "nrt_api_crd.yaml has no v1alpha2 version";
  return {};
}

std::set<std::string> keys_of(const YAML::Node& map) {
  std::set<std::string> keys;
  for (const auto& kv : map) keys.insert(kv.first.as<std::string>());
  return keys;
}

// Every key of `object` is a property of `schema`, every required property is present, and
// scalar types agree (integer / string / array / object; int-or-string quantities are strings
// here, matched against the schema's pattern).
void expect_matches(const nlohmann::json& object, const YAML::Node& schema, const std::string& at) {
  ASSERT_TRUE(object.is_object()) << at;
  const auto properties = keys_of(schema["properties"]);
  for (const auto& [key, value] : object.items()) {
    ASSERT_TRUE(properties.contains(key)) << at << "." << key << " is not in the CRD's schema";
    const YAML::Node prop = schema["properties"][key];
    const std::string where = at + "." + key;
    if (prop["x-kubernetes-int-or-string"]) {
      ASSERT_TRUE(value.is_string() || value.is_number_integer()) << where;
      const std::regex pattern(prop["pattern"].as<std::string>());
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      EXPECT_TRUE(std::regex_match(text, pattern))
          << where << " = '" << text << "' is not a Kubernetes quantity";
      continue;
    }
    const std::string type = prop["type"].as<std::string>();
    if (type == "string") {
      EXPECT_TRUE(value.is_string()) << where;
    } else if (type == "integer") {
      EXPECT_TRUE(value.is_number_integer()) << where;
    } else if (type == "object") {
      EXPECT_TRUE(value.is_object()) << where;
      if (prop["properties"]) expect_matches(value, prop, where);
    } else if (type == "array") {
      ASSERT_TRUE(value.is_array()) << where;
      const YAML::Node items = prop["items"];
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string item_at = where + "[" + std::to_string(i) + "]";
        if (items["type"].as<std::string>() == "object") {
          expect_matches(value[i], items, item_at);
        } else {
          EXPECT_TRUE(value[i].is_string()) << item_at;
        }
      }
    }
  }
  if (schema["required"]) {
    for (const auto& r : schema["required"]) {
      EXPECT_TRUE(object.contains(r.as<std::string>()))
          << at << " lacks the required " << r.as<std::string>();
    }
  }
}

// Structure of a YAML node as a set of key paths ("zones[].resources[].capacity").
void key_paths(const YAML::Node& n, const std::string& at, std::set<std::string>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string p =
          at.empty() ? kv.first.as<std::string>() : at + "." + kv.first.as<std::string>();
      out.insert(p);
      key_paths(kv.second, p, out);
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) key_paths(item, at + "[]", out);
  }
}

void key_paths(const nlohmann::json& n, const std::string& at, std::set<std::string>& out) {
  if (n.is_object()) {
    for (const auto& [k, v] : n.items()) {
      const std::string p = at.empty() ? k : at + "." + k;
      out.insert(p);
      key_paths(v, p, out);
    }
  } else if (n.is_array()) {
    for (const auto& item : n) key_paths(item, at + "[]", out);
  }
}

// YAML back to JSON: quoted scalars are strings, plain ones integers or booleans when they read
// as such.
nlohmann::json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& item : n) a.push_back(to_json(item));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string s = n.as<std::string>();
  if (n.Tag() == "!") return s;  // quoted
  if (std::regex_match(s, std::regex("-?[0-9]+"))) return std::stoll(s);
  if (s == "true" || s == "false") return s == "true";
  return s;
}

const nlohmann::json* find_resource(const nlohmann::json& zone, const std::string& name) {
  for (const auto& r : zone.at("resources")) {
    if (r.at("name") == name) return &r;
  }
  return nullptr;
}

TEST(NrtExport, PresetNodeMatchesTheCrdSchema) {
  const YAML::Node crd = YAML::LoadFile(kNrtDir + "nrt_api_crd.yaml");
  auto t = hw::preset("rtx4090-2s2n", "gpu-node-1");
  ASSERT_TRUE(t) << t.error().message();
  auto nrt = node_resource_topology(*t, "gpu-node-1", nullptr);
  ASSERT_TRUE(nrt) << nrt.error().message();

  EXPECT_EQ(nrt->at("apiVersion"), crd["spec"]["group"].as<std::string>() + "/" + "v1alpha2");
  EXPECT_EQ(nrt->at("kind"), crd["spec"]["names"]["kind"].as<std::string>());
  EXPECT_EQ(nrt->at("metadata").at("name"), "gpu-node-1");
  expect_matches(*nrt, v1alpha2_schema(crd), "nrt");
}

TEST(NrtExport, HasTheInstanceExamplesStructure) {
  const YAML::Node example = YAML::LoadFile(kNrtDir + "nrt_api_crd-instance-example.yaml");
  std::set<std::string> wanted;
  key_paths(example, "", wanted);
  auto t = hw::preset("a100-2s4n", "dgx-a100");
  ASSERT_TRUE(t) << t.error().message();
  auto nrt = node_resource_topology(*t, "dgx-a100", nullptr);
  ASSERT_TRUE(nrt) << nrt.error().message();
  std::set<std::string> have;
  key_paths(*nrt, "", have);
  for (const auto& p : wanted) EXPECT_TRUE(have.contains(p)) << "missing " << p;
  // The example's zone naming and type: NUMA node N is zone "node-N" of type "Node".
  for (std::size_t j = 0; j < nrt->at("zones").size(); ++j) {
    const auto& zone = nrt->at("zones")[j];
    EXPECT_EQ(zone.at("name"), fmt::format("node-{}", t->numa(static_cast<int>(j)).os_index));
    EXPECT_EQ(zone.at("type"), example["zones"][0]["type"].as<std::string>());
  }
}

TEST(NrtExport, CountsEachNumaNodesCpusMemoryAndGpus) {
  // a100-2s4n attaches GPU pairs to every second NUMA node: zones without GPUs list no GPU
  // resource.
  auto t = hw::preset("a100-2s4n", "dgx-a100");
  ASSERT_TRUE(t) << t.error().message();
  auto nrt = node_resource_topology(*t, "dgx-a100", nullptr);
  ASSERT_TRUE(nrt) << nrt.error().message();
  const auto& zones = nrt->at("zones");
  ASSERT_EQ(zones.size(), t->numa_nodes().size());
  int total_gpus = 0;
  int zones_without_gpus = 0;
  for (int j = 0; j < static_cast<int>(zones.size()); ++j) {
    const auto& zone = zones[static_cast<std::size_t>(j)];
    int pus = 0;
    for (int g : t->core_groups_of_numa(j)) pus += static_cast<int>(t->core_group(g).cpus.size());
    const auto* cpu = find_resource(zone, "cpu");
    const auto* memory = find_resource(zone, "memory");
    const auto* gpu = find_resource(zone, "nvidia.com/gpu");
    ASSERT_TRUE(cpu && memory);
    EXPECT_EQ(cpu->at("capacity"), std::to_string(pus));
    EXPECT_EQ(memory->at("capacity"), bytes_quantity(*t->numa(j).local_memory_bytes));
    std::vector<const nlohmann::json*> resources{cpu, memory};
    if (t->gpus_of_numa(j).empty()) {
      EXPECT_EQ(gpu, nullptr) << zone.dump();
      ++zones_without_gpus;
    } else {
      ASSERT_NE(gpu, nullptr);
      EXPECT_EQ(gpu->at("capacity"), std::to_string(t->gpus_of_numa(j).size()));
      total_gpus += std::stoi(gpu->at("capacity").get<std::string>());
      resources.push_back(gpu);
    }
    for (const auto* r : resources) {
      EXPECT_EQ(r->at("allocatable"), r->at("capacity"));   // nothing reserved
      EXPECT_EQ(r->at("available"), r->at("allocatable"));  // nothing allocated
    }
  }
  EXPECT_EQ(total_gpus, static_cast<int>(t->gpus().size()));
  EXPECT_GT(total_gpus, 0);
  EXPECT_GT(zones_without_gpus, 0);
}

TEST(NrtExport, UnknownMemoryIsLeftOutNotZero) {
  auto t = hw::load_topology_file(std::string(TESSERA_SHARED_DATA_DIR) +
                                  "/topology/nccl_azure/ndv5-topo.xml");
  ASSERT_TRUE(t) << t.error().message();
  auto nrt = node_resource_topology(*t, "ndv5", nullptr);
  ASSERT_TRUE(nrt) << nrt.error().message();
  for (const auto& zone : nrt->at("zones")) {
    EXPECT_EQ(find_resource(zone, "memory"), nullptr) << zone.dump();
    EXPECT_NE(find_resource(zone, "cpu"), nullptr);
    EXPECT_EQ(find_resource(zone, "nvidia.com/gpu")->at("capacity"), "4");
  }
  expect_matches(*nrt, v1alpha2_schema(YAML::LoadFile(kNrtDir + "nrt_api_crd.yaml")), "nrt");
}

TEST(NrtExport, AllocatableIsCapacityLessTheKubeletsReservations) {
  hw::TopologyOptions o;
  o.nccl_numa_per_socket = 2;
  o.numa_memory_bytes = 220 * kGiB;
  o.reserved_cpus = {0, 1};
  o.reserved_memory_bytes = {{0, 4 * kGiB}};
  auto t = hw::load_topology_file(
      std::string(TESSERA_SHARED_DATA_DIR) + "/topology/nccl_azure/ndv4-topo.xml", o);
  ASSERT_TRUE(t) << t.error().message();
  cluster::ClusterState state;
  auto node = state.add_node("ndv4", std::make_shared<const hw::HostTopology>(*t));
  ASSERT_TRUE(node);
  cluster::Pod pod;
  pod.name = "default/llm";
  pod.request = {.gpus = 0, .cpus = 4, .memory_bytes = 16 * kGiB};
  cluster::Assignment a;
  a.core_groups = {0};
  a.memory = {{.numa = 0, .bytes = 16 * kGiB}};
  ASSERT_TRUE(state.bind(pod, *node, a));
  auto nrt = node_resource_topology(state.node(*node));
  ASSERT_TRUE(nrt) << nrt.error().message();
  const auto& zone0 = nrt->at("zones")[0];
  const auto* cpu = find_resource(zone0, "cpu");
  const auto* memory = find_resource(zone0, "memory");
  ASSERT_TRUE(cpu && memory);
  EXPECT_EQ(cpu->at("capacity"), "24");
  EXPECT_EQ(cpu->at("allocatable"), "22");
  EXPECT_EQ(cpu->at("available"), "18");
  EXPECT_EQ(memory->at("capacity"), "220Gi");
  EXPECT_EQ(memory->at("allocatable"), "216Gi");
  EXPECT_EQ(memory->at("available"), "200Gi");
  const auto& zone1 = nrt->at("zones")[1];
  EXPECT_EQ(find_resource(zone1, "cpu")->at("allocatable"), "24");
  EXPECT_EQ(find_resource(zone1, "memory")->at("allocatable"), "220Gi");
}

TEST(NrtExport, AvailableIsWhatTheAllocationLeaves) {
  cluster::ClusterState state;
  auto node = state.add_node("node-a", std::make_shared<const hw::HostTopology>(small_server("a")));
  ASSERT_TRUE(node);
  cluster::Pod pod;
  pod.name = "default/llm";
  pod.request = {.gpus = 2, .cpus = 4, .memory_bytes = 16 * kGiB};
  cluster::Assignment a;
  a.gpus = {0, 1};
  a.core_groups = {0};
  a.memory = {{.numa = 0, .bytes = 16 * kGiB}};
  ASSERT_TRUE(state.bind(pod, *node, a));

  auto nrt = node_resource_topology(state.node(*node));
  ASSERT_TRUE(nrt) << nrt.error().message();
  const auto& zone0 = nrt->at("zones")[0];
  const auto& zone1 = nrt->at("zones")[1];
  EXPECT_EQ(find_resource(zone0, "nvidia.com/gpu")->at("available"), "0");
  EXPECT_EQ(find_resource(zone0, "cpu")->at("capacity"), "16");  // 8 cores x 2 threads
  EXPECT_EQ(find_resource(zone0, "cpu")->at("available"), "8");  // one group of 4 cores held
  EXPECT_EQ(find_resource(zone0, "memory")->at("available"), "48Gi");
  EXPECT_EQ(find_resource(zone1, "nvidia.com/gpu")->at("available"), "2");
  EXPECT_EQ(find_resource(zone1, "cpu")->at("available"), "16");
  EXPECT_EQ(find_resource(zone1, "memory")->at("available"), "64Gi");
}

TEST(NrtExport, CostsAreNumaDistances) {
  auto t = hw::preset("rtx4090-2s2n", "n");
  ASSERT_TRUE(t) << t.error().message();
  auto nrt = node_resource_topology(*t, "n", nullptr);
  ASSERT_TRUE(nrt);
  std::map<std::pair<std::string, std::string>, std::int64_t> d;
  for (const auto& zone : nrt->at("zones")) {
    ASSERT_EQ(zone.at("costs").size(), t->numa_nodes().size());
    for (const auto& c : zone.at("costs")) {
      d[{zone.at("name").get<std::string>(), c.at("name").get<std::string>()}] =
          c.at("value").get<std::int64_t>();
    }
  }
  const auto cost = [&d](const std::string& a, const std::string& b) { return d.at({a, b}); };
  for (const auto& [pair, value] : d) {
    EXPECT_EQ(value, cost(pair.second, pair.first)) << "asymmetric";
    if (pair.first == pair.second) {
      EXPECT_EQ(value, 10);
    }
  }
  // rtx4090-2s2n: NUMA 0 and 1 on socket 0, 2 and 3 on socket 1.
  EXPECT_LT(cost("node-0", "node-1"), cost("node-0", "node-2"));
  EXPECT_GT(cost("node-0", "node-1"), 10);
  EXPECT_EQ(cost("node-0", "node-2"), 21);
}

TEST(NrtExport, CostsAreTheFirmwaresDistancesWhereTheTopologyHasThem) {
  // POWER8's NUMALatency is 10 40 40 10; without it the fixed cross-socket value would be 21.
  auto t = hw::load_topology_file(std::string(TESSERA_SHARED_DATA_DIR) +
                                  "/topology/hwloc/power8gpudistances.xml");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(numa_distance(*t, 0, 1), 40);
  EXPECT_EQ(numa_distance(*t, 1, 1), 10);
  auto nrt = node_resource_topology(*t, "drac-12", nullptr);
  ASSERT_TRUE(nrt) << nrt.error().message();
  const auto& costs = nrt->at("zones")[0].at("costs");
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0], (nlohmann::json{{"name", "node-0"}, {"value", 10}}));
  EXPECT_EQ(costs[1], (nlohmann::json{{"name", "node-1"}, {"value", 40}}));
}

TEST(NrtExport, YamlLoadsBackToTheSameObject) {
  auto t = hw::preset("a100-2s4n", "dgx-a100");
  ASSERT_TRUE(t);
  auto nrt = node_resource_topology(*t, "dgx-a100", nullptr);
  ASSERT_TRUE(nrt);
  const std::string yaml = to_yaml(*nrt);
  EXPECT_NE(yaml.find("kind: NodeResourceTopology"), std::string::npos) << yaml;
  EXPECT_EQ(to_json(YAML::Load(yaml)), *nrt) << yaml;
}

TEST(NrtExport, YamlQuotesStringsThatWouldReadAsOtherTypes) {
  const nlohmann::json j = {{"a", "8"}, {"b", "true"}, {"c", ""}, {"d", "64Gi"}, {"e", 8}};
  const YAML::Node back = YAML::Load(to_yaml(j));
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back["a"].Tag(), "!");
  EXPECT_EQ(back["d"].Tag(), "?");  // plain: no quotes needed
}

TEST(NrtExport, HostWithoutGpusListsNoGpuResource) {
  auto nrt = node_resource_topology(small_server("cpu-only", 0), "cpu-only", nullptr);
  ASSERT_TRUE(nrt);
  for (const auto& zone : nrt->at("zones")) {
    EXPECT_EQ(find_resource(zone, "nvidia.com/gpu"), nullptr);
    EXPECT_NE(find_resource(zone, "cpu"), nullptr);
  }
}

TEST(NrtExport, TopologyManagerSettingsAsNfdWritesThem) {
  NrtOptions o;
  EXPECT_EQ(topology_policy(o), "None");
  o.topology_manager_policy = "single-numa-node";
  EXPECT_EQ(topology_policy(o), "SingleNUMANodeContainerLevel");
  o.topology_manager_scope = "pod";
  EXPECT_EQ(topology_policy(o), "SingleNUMANodePodLevel");
  o.topology_manager_policy = "best-effort";
  EXPECT_EQ(topology_policy(o), "BestEffortPodLevel");

  auto nrt = node_resource_topology(small_server("a"), "a", nullptr, o);
  ASSERT_TRUE(nrt);
  EXPECT_EQ(nrt->at("topologyPolicies"), nlohmann::json::array({"BestEffortPodLevel"}));
  EXPECT_EQ(nrt->at("attributes"),
            nlohmann::json::parse(R"([{"name": "topologyManagerPolicy", "value": "best-effort"},
                                      {"name": "topologyManagerScope", "value": "pod"}])"));
}

TEST(NrtExport, RejectsBadOptionsAndNamesNamingWhatIsWrong) {
  NrtOptions o;
  o.topology_manager_policy = "strict";
  auto bad_policy = node_resource_topology(small_server("a"), "a", nullptr, o);
  ASSERT_FALSE(bad_policy);
  EXPECT_NE(bad_policy.error().message().find("'strict'"), std::string::npos);
  for (const std::string& name :
       std::vector<std::string>{"", "Node_A", "-a", "a-", std::string(254, 'a')}) {
    auto r = node_resource_topology(small_server("a"), name, nullptr);
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().domain(), core::Domain::kK8s);
  }
  EXPECT_TRUE(validate_object_name("gpu-node-1.cluster.local"));
}

TEST(NrtExport, RejectsAnAllocationOfAnotherTopology) {
  cluster::ClusterState state;
  ASSERT_TRUE(state.add_node("b", std::make_shared<const hw::HostTopology>(small_server("b"))));
  auto r = node_resource_topology(small_server("a"), "a", &state.node(0));
  EXPECT_FALSE(r);
}

TEST(NrtExport, BytesFromAFlag) {
  EXPECT_EQ(parse_bytes("64Gi", "--numa-memory"), 64 * kGiB);
  EXPECT_EQ(parse_bytes("68719476736", "--numa-memory"), 64 * kGiB);
  EXPECT_EQ(parse_bytes("1.5G", "--numa-memory"), 1500000000);
  EXPECT_EQ(parse_bytes("0.5", "--numa-memory"), 1);  // rounded up to whole bytes
  for (const std::string bad : {"", "0", "-1Gi", "64GB", "1e30", "lots"}) {
    auto r = parse_bytes(bad, "--numa-memory");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().message().find(fmt::format("--numa-memory '{}': ", bad)), 0u)
        << r.error().message();
  }
}

TEST(NrtExport, Quantities) {
  EXPECT_EQ(bytes_quantity(64 * kGiB), "64Gi");
  EXPECT_EQ(bytes_quantity(1536LL << 20), "1536Mi");
  EXPECT_EQ(bytes_quantity(std::int64_t{1} << 40), "1Ti");
  EXPECT_EQ(bytes_quantity(1000), "1000");
  EXPECT_EQ(bytes_quantity(1024), "1Ki");
  EXPECT_EQ(bytes_quantity(0), "0");
  EXPECT_EQ(count_quantity(96), "96");
}

}  // namespace
}  // namespace tessera::k8s
