// deploy/kubernetes: the KubeSchedulerConfiguration's extender entry points at routes the extender
// serves (urlPrefix's path + each verb), with the settings tessera relies on, and the extender's
// Deployment starts it with that prefix; every container runs the image of this version.

#include <gtest/gtest.h>
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <string>

#include "tessera/core/version.hpp"
#include "tessera/k8s/extender_service.hpp"

namespace tessera::k8s {
namespace {

const std::string kExamples = std::string(TESSERA_SOURCE_DIR) + "/deploy/kubernetes/";

TEST(SchedulerConfig, ExtenderEntryMatchesTheServedRoutes) {
  const YAML::Node cfg = YAML::LoadFile(kExamples + "scheduler-config.yaml");
  EXPECT_EQ(cfg["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(cfg["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  ASSERT_TRUE(cfg["extenders"].IsSequence());
  ASSERT_EQ(cfg["extenders"].size(), 1u);
  const YAML::Node e = cfg["extenders"][0];
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(e["ignorable"].as<bool>());
  EXPECT_GT(e["weight"].as<int>(), 0);
  ASSERT_EQ(e["managedResources"].size(), 1u);
  EXPECT_EQ(e["managedResources"][0]["name"].as<std::string>(), "nvidia.com/gpu");

  // urlPrefix = scheme://host:port/path
  const std::string url = e["urlPrefix"].as<std::string>();
  const auto scheme_end = url.find("://");
  ASSERT_NE(scheme_end, std::string::npos);
  const auto path_start = url.find('/', scheme_end + 3);
  const std::string prefix = path_start == std::string::npos ? "" : url.substr(path_start);

  ExtenderConfig config;
  config.url_prefix = prefix;
  config.filter_verb = e["filterVerb"].as<std::string>();
  config.prioritize_verb = e["prioritizeVerb"].as<std::string>();
  config.preempt_verb = e["preemptVerb"].as<std::string>();
  config.bind_verb = e["bindVerb"].as<std::string>();
  ExtenderService service(config, std::make_shared<RecordOnlyBinder>());
  auto server = HttpServer::create({});
  ASSERT_TRUE(server);
  service.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  httplib::Client c("127.0.0.1", (*server)->port());
  for (const char* verb : {"filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb"}) {
    const std::string path = prefix + "/" + e[verb].as<std::string>();
    auto r = c.Post(path.c_str(), "{}", "application/json");
    ASSERT_TRUE(r) << path;
    // Served: an answer from the verb (200, or 400 for the empty pod), never "no route".
    EXPECT_NE(r->status, 404) << path << ": " << r->body;
  }

  // The Deployment runs the extender with the same prefix and port.
  bool found = false;
  for (const auto& doc : YAML::LoadAllFromFile(kExamples + "extender.yaml")) {
    if (!doc["kind"] || doc["kind"].as<std::string>() != "Deployment") continue;
    const YAML::Node container = doc["spec"]["template"]["spec"]["containers"][0];
    std::vector<std::string> args;
    for (const auto& a : container["args"]) args.push_back(a.as<std::string>());
    const auto at = std::find(args.begin(), args.end(), "--url-prefix");
    ASSERT_NE(at, args.end());
    ASSERT_NE(at + 1, args.end());
    EXPECT_EQ(*(at + 1), prefix);
    found = true;
  }
  EXPECT_TRUE(found);
}

// The extender's ClusterRole grants each call it makes: the Binding, the placement patch, the
// list and watch of pods that keep its state, and the Lease of its leader election.
TEST(SchedulerConfig, TheExtendersRoleGrantsItsApiCalls) {
  std::set<std::string> granted;
  for (const auto& doc : YAML::LoadAllFromFile(kExamples + "extender.yaml")) {
    if (!doc["kind"] || doc["kind"].as<std::string>() != "ClusterRole") continue;
    for (const auto& rule : doc["rules"]) {
      for (const auto& resource : rule["resources"]) {
        for (const auto& verb : rule["verbs"]) {
          granted.insert(resource.as<std::string>() + " " + verb.as<std::string>());
        }
      }
    }
  }
  for (const char* need : {"pods/binding create", "pods get", "pods list", "pods watch",
                           "pods patch", "leases get", "leases create", "leases update"}) {
    EXPECT_TRUE(granted.contains(need)) << need;
  }
}

TEST(SchedulerConfig, AgentDaemonSetPushesToTheExtender) {
  bool found = false;
  for (const auto& doc : YAML::LoadAllFromFile(kExamples + "agent-daemonset.yaml")) {
    if (!doc["kind"] || doc["kind"].as<std::string>() != "DaemonSet") continue;
    const YAML::Node container = doc["spec"]["template"]["spec"]["containers"][0];
    ASSERT_TRUE(container["args"].IsSequence());
    EXPECT_EQ(container["args"][0].as<std::string>(), "agent");
    found = true;
  }
  EXPECT_TRUE(found);
}

// The image tag is typed in the manifests; the version is CMake's project version.
TEST(SchedulerConfig, ManifestsRunTheImageOfThisVersion) {
  const std::string image = std::string("tessera:") + std::string(core::kVersion);
  int containers = 0;
  for (const char* file : {"extender.yaml", "agent-daemonset.yaml", "tesserad-daemonset.yaml"}) {
    for (const auto& doc : YAML::LoadAllFromFile(kExamples + file)) {
      // Deployments and DaemonSets; the ConfigMaps, Services and RBAC objects hold no pod.
      if (!doc["spec"] || !doc["spec"]["template"]) continue;
      for (const auto& c : doc["spec"]["template"]["spec"]["containers"]) {
        EXPECT_EQ(c["image"].as<std::string>(), image) << file;
        ++containers;
      }
    }
  }
  EXPECT_EQ(containers, 3);
  // The example tenant copies the interposer out of the same image.
  const YAML::Node tenant =
      YAML::LoadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/daemon/tenant-pod.yaml");
  EXPECT_EQ(tenant["spec"]["initContainers"][0]["image"].as<std::string>(), image);
}

}  // namespace
}  // namespace tessera::k8s
