// The deployment files (deploy/) against the command they start: the systemd unit's and the
// DaemonSet's `tessera daemon` command lines, the DaemonSet's readiness probe and the example
// tenant must parse as tessera's command line and agree on where the socket is.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/cli/command_line.hpp"

namespace tessera::cli {
namespace {

const std::string kDeploy = std::string(TESSERA_SOURCE_DIR) + "/deploy/";

// Parses `args` (without the program) as tessera's command line; "" when it parses, else why.
std::string parse_error(const std::vector<std::string>& args) {
  CommandLine line;
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    line.app().parse(reversed);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

// The value of `--name=value` or `--name value` in `args`.
std::string option(const std::vector<std::string>& args, const std::string& name) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind(name + "=", 0) == 0) return args[i].substr(name.size() + 1);
    if (args[i] == name && i + 1 < args.size()) return args[i + 1];
  }
  return "";
}

std::vector<std::string> strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const auto& n : list) out.push_back(n.as<std::string>());
  return out;
}

TEST(DeployFiles, TheSystemdUnitStartsADaemonTesseraAccepts) {
  std::ifstream in(kDeploy + "systemd/tesserad.service");
  ASSERT_TRUE(in) << "deploy/systemd/tesserad.service";
  std::string line, exec, runtime_dir;
  while (std::getline(in, line)) {
    if (line.rfind("ExecStart=", 0) == 0) exec = line.substr(10);
    if (line.rfind("RuntimeDirectory=", 0) == 0) runtime_dir = line.substr(17);
  }
  std::istringstream words(exec);
  std::vector<std::string> args;
  for (std::string w; words >> w;) args.push_back(w);
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(args[0], "/usr/local/bin/tessera");
  args.erase(args.begin());
  EXPECT_EQ(parse_error(args), "");
  EXPECT_EQ(option(args, "--socket"), "/run/" + runtime_dir + "/tesserad.sock");
}

TEST(DeployFiles, TheDaemonSetItsProbeAndTheTenantAgreeOnTheSocket) {
  YAML::Node daemonset;
  for (const auto& d : YAML::LoadAllFromFile(kDeploy + "kubernetes/tesserad-daemonset.yaml")) {
    if (d["kind"].as<std::string>() == "DaemonSet") daemonset = d;
  }
  const YAML::Node pod =
      YAML::LoadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/daemon/tenant-pod.yaml");
  ASSERT_TRUE(daemonset && pod);
  ASSERT_EQ(pod["kind"].as<std::string>(), "Pod");
  const YAML::Node spec = daemonset["spec"]["template"]["spec"];
  const YAML::Node container = spec["containers"][0];
  const std::vector<std::string> args = strings(container["args"]);
  EXPECT_EQ(strings(container["command"]), std::vector<std::string>{"/usr/local/bin/tessera"});
  EXPECT_EQ(parse_error(args), "");
  const std::string socket = option(args, "--socket");
  ASSERT_FALSE(socket.empty());

  std::vector<std::string> probe = strings(container["readinessProbe"]["exec"]["command"]);
  probe.erase(probe.begin());
  EXPECT_EQ(parse_error(probe), "");
  EXPECT_EQ(option(probe, "--socket"), socket);

  // The socket's folder is the hostPath both the daemon and the tenant mount.
  const std::string folder = socket.substr(0, socket.rfind('/'));
  EXPECT_EQ(container["volumeMounts"][0]["mountPath"].as<std::string>(), folder);
  EXPECT_EQ(spec["volumes"][0]["hostPath"]["path"].as<std::string>(), folder);
  EXPECT_EQ(pod["spec"]["volumes"][0]["hostPath"]["path"].as<std::string>(), folder);
  std::string tenant_socket;
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"].as<std::string>() == "TESSERA_DAEMON_SOCKET")
      tenant_socket = e["value"].as<std::string>();
  }
  EXPECT_EQ(tenant_socket, socket);
}

// `kubectl apply -k deploy/`: every file the kustomization names exists and holds objects with
// an apiVersion, a kind and a name; every workload's containers have resource requests and,
// where the kubelet can reach them, a readiness probe; no example object (a tenant Pod) is among
// them.
TEST(DeployFiles, TheKustomizationAppliesEveryComponentAndNothingElse) {
  const YAML::Node k = YAML::LoadFile(kDeploy + "kustomization.yaml");
  EXPECT_EQ(k["kind"].as<std::string>(), "Kustomization");
  std::vector<std::string> kinds;
  for (const auto& resource : k["resources"]) {
    const std::string file = kDeploy + resource.as<std::string>();
    ASSERT_TRUE(std::ifstream(file)) << file;
    for (const auto& doc : YAML::LoadAllFromFile(file)) {
      if (!doc) continue;
      ASSERT_TRUE(doc["apiVersion"] && doc["kind"] && doc["metadata"]["name"]) << file;
      const std::string kind = doc["kind"].as<std::string>();
      kinds.push_back(kind);
      EXPECT_NE(kind, "Pod") << file << ": an example, not a component";
      if (kind != "Deployment" && kind != "DaemonSet") continue;
      for (const auto& c : doc["spec"]["template"]["spec"]["containers"]) {
        const std::string where = file + ": " + c["name"].as<std::string>();
        // The agent serves on its pod's loopback only (its POST /allocations takes no token),
        // where the kubelet's probes cannot reach it.
        if (c["name"].as<std::string>() != "agent") {
          EXPECT_TRUE(c["readinessProbe"]) << where;
        }
        EXPECT_TRUE(c["resources"]["requests"]["cpu"] && c["resources"]["requests"]["memory"])
            << where;
      }
    }
  }
  for (const char* kind : {"Deployment", "DaemonSet", "ClusterRole", "ServiceAccount"}) {
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end()) << kind;
  }
  for (const auto& generator : k["configMapGenerator"]) {
    for (const auto& entry : generator["files"]) {
      const std::string spec = entry.as<std::string>();
      const std::string file = kDeploy + spec.substr(spec.find('=') + 1);
      EXPECT_TRUE(std::ifstream(file)) << file;
    }
  }
}

}  // namespace
}  // namespace tessera::cli
