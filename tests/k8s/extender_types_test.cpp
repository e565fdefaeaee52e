// The extender/v1 wire types against kube-scheduler's own encodings
// (../shared/data/k8s/extender/wire_examples, from kube-scheduler's types_test.go): each parses and
// re-serialises to the same JSON; keys match case-insensitively; wrong types name their path.

#include "tessera/k8s/extender_types.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::k8s {
namespace {

using nlohmann::json;

const std::string kWire = TESSERA_SHARED_DATA_DIR "/k8s/extender/wire_examples/";

json load(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str(), nullptr, false);
}

template <typename F>
json round_trip(const json& in, F parse) {
  auto parsed = parse(in);
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message());
  if (!parsed) return nullptr;
  return to_json(*parsed);
}

TEST(ExtenderTypes, EveryWireExampleRoundTrips) {
  if (!std::filesystem::exists(kWire)) GTEST_SKIP() << "no ../shared/data beside the checkout";
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(kWire)) {
    const std::string type = e.path().stem().string();
    const json in = load(e.path().string());
    ASSERT_FALSE(in.is_discarded()) << e.path();
    json out;
    if (type == "ExtenderArgs") {
      out = round_trip(in, parse_extender_args);
    } else if (type == "ExtenderFilterResult") {
      out = round_trip(in, parse_filter_result);
    } else if (type == "HostPriority") {
      out = round_trip(in, parse_host_priority);
    } else if (type == "ExtenderPreemptionArgs") {
      out = round_trip(in, parse_preemption_args);
    } else if (type == "ExtenderPreemptionResult") {
      out = round_trip(in, parse_preemption_result);
    } else if (type == "ExtenderBindingArgs") {
      out = round_trip(in, parse_binding_args);
    } else if (type == "ExtenderBindingResult") {
      out = round_trip(in, parse_binding_result);
    } else {
      ADD_FAILURE() << "unexpected wire example " << e.path();
      continue;
    }
    EXPECT_EQ(out, in) << type << ":\n" << out.dump(2) << "\nwant\n" << in.dump(2);
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

TEST(ExtenderTypes, WireExampleValues) {
  if (!std::filesystem::exists(kWire)) GTEST_SKIP() << "no ../shared/data beside the checkout";
  auto args = parse_extender_args(load(kWire + "ExtenderArgs.json"));
  ASSERT_TRUE(args);
  ASSERT_TRUE(args->node_names);
  EXPECT_EQ(*args->node_names, std::vector<std::string>{"node1"});
  EXPECT_EQ(args->pod["metadata"]["name"], "podname");
  // NodeNames wins over Nodes when both are sent.
  EXPECT_EQ(candidate_names(*args), std::vector<std::string>{"node1"});
  args->node_names.reset();
  EXPECT_EQ(candidate_names(*args), std::vector<std::string>{"nodename"});

  auto pre = parse_preemption_args(load(kWire + "ExtenderPreemptionArgs.json"));
  ASSERT_TRUE(pre);
  ASSERT_TRUE(pre->node_name_to_meta_victims);
  EXPECT_EQ(pre->node_name_to_meta_victims->at("foo").pods.at(0).uid, "myuid");
  EXPECT_EQ(pre->node_name_to_meta_victims->at("foo").num_pdb_violations, 1);
  EXPECT_EQ(pre->node_name_to_victims->at("foo").pods.size(), 1u);

  auto bind = parse_binding_args(load(kWire + "ExtenderBindingArgs.json"));
  ASSERT_TRUE(bind);
  EXPECT_EQ(bind->pod_name, "mypodname");
  EXPECT_EQ(bind->pod_namespace, "mypodnamespace");
  EXPECT_EQ(bind->pod_uid, "mypoduid");
  EXPECT_EQ(bind->node, "mynode");
}

TEST(ExtenderTypes, KeysMatchCaseInsensitivelyExactFirst) {
  // kube-scheduler's round-trip test also decodes the all-lower-case form.
  auto a = parse_binding_args(
      json{{"podname", "p"}, {"PODNAMESPACE", "ns"}, {"podUid", "u"}, {"node", "n"}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pod_name, "p");
  EXPECT_EQ(a->pod_namespace, "ns");
  EXPECT_EQ(a->pod_uid, "u");
  EXPECT_EQ(a->node, "n");
  auto b = parse_extender_args(json{{"pod", json::object()}, {"nodenames", {"a", "b"}}});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->node_names->size(), 2u);
  // An exact match wins over a case-folded one.
  auto c = parse_binding_args(json{{"node", "folded"}, {"Node", "exact"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->node, "exact");
  // Re-serialised with the Go names.
  EXPECT_TRUE(to_json(*a).contains("PodNamespace"));
}

TEST(ExtenderTypes, NullIsAbsent) {
  auto a = parse_extender_args(json{{"Pod", nullptr}, {"Nodes", nullptr}, {"NodeNames", nullptr}});
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->pod.is_null());
  EXPECT_FALSE(a->nodes);
  EXPECT_FALSE(a->node_names);
  EXPECT_TRUE(parse_host_priority_list(nullptr));
}

TEST(ExtenderTypes, WrongTypesNameTheirPath) {
  auto expect_error = [](const auto& r, const std::string& needle) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), core::Code::kParse);
    EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
  };
  expect_error(parse_extender_args(json{{"NodeNames", {"a", 3}}}), "ExtenderArgs.NodeNames[1]");
  expect_error(parse_extender_args(json::array()), "ExtenderArgs: expected an object");
  expect_error(parse_extender_args(json{{"Pod", "x"}}), "ExtenderArgs.Pod");
  expect_error(parse_extender_args(json{{"Nodes", {{"items", {{{"metadata", {{"name", 5}}}}}}}}}),
               "ExtenderArgs.Nodes.items[0].metadata.name");
  expect_error(parse_host_priority(json{{"Host", "h"}, {"Score", 1.5}}), "HostPriority.Score");
  expect_error(parse_host_priority_list(json{{{"Host", 1}}}), "HostPriorityList[0]");
  expect_error(
      parse_preemption_args(json{{"NodeNameToMetaVictims", {{"n1", {{"Pods", {{{"UID", 7}}}}}}}}}),
      "NodeNameToMetaVictims.n1.Pods[0].UID");
  expect_error(
      parse_preemption_args(json{{"NodeNameToVictims", {{"n1", {{"NumPDBViolations", "1"}}}}}}),
      "NodeNameToVictims.n1.NumPDBViolations");
  expect_error(parse_filter_result(json{{"FailedNodes", {{"n", 1}}}}), "FailedNodes.n");
  expect_error(parse_binding_args(json{{"PodUID", json::array()}}), "ExtenderBindingArgs.PodUID");
  auto garbage = parse_body("{\"Pod\": ", "ExtenderArgs");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message().find("not valid JSON"), std::string::npos);
}

TEST(ExtenderTypes, DeeplyNestedBodiesAreRefused) {
  const std::string deep = "{\"Pod\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto r = parse_body(deep, "ExtenderArgs");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("deeper than 64"), std::string::npos);
  // Brackets inside strings do not count.
  const std::string quoted =
      "{\"Pod\": {\"metadata\": {\"name\": \"" + std::string(1000, '[') + "\\\"\"}}}";
  EXPECT_TRUE(parse_body(quoted, "ExtenderArgs")) << quoted.substr(0, 40);
}

TEST(ExtenderTypes, FilterResultCarriesTheFormItWasAskedIn) {
  ExtenderFilterResult r;
  r.node_names = std::vector<std::string>{"a"};
  r.failed_nodes["b"] = "why";
  const json j = to_json(r);
  EXPECT_EQ(j["NodeNames"], json::array({"a"}));
  EXPECT_FALSE(j.contains("Nodes"));
  EXPECT_EQ(j["FailedNodes"]["b"], "why");
  EXPECT_TRUE(j["FailedAndUnresolvableNodes"].empty());
  EXPECT_EQ(j["Error"], "");
}

}  // namespace
}  // namespace tessera::k8s
