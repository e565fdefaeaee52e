#pragma once
// `tessera extender`: the Kubernetes scheduler extender (k8s/extender_service.hpp) as a server.
// Nodes come from agents' pushes, and optionally from topology files or a generated preset at
// start; bindings go to the API server when one is configured, else are only recorded (dry run).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tessera/cli/api_server_flags.hpp"
#include "tessera/cli/command.hpp"
#include "tessera/core/error.hpp"
#include "tessera/k8s/extender_service.hpp"

namespace tessera::cli {

struct ExtenderFlags {
  CLI::App* command = nullptr;
  std::string listen = "127.0.0.1:8888";
  std::string cert, key;
  std::string client_ca;  // mutual TLS: the CA client certificates must verify against
  std::string url_prefix;
  std::string method = "incremental";
  double alpha = -1;    // < 0: the cluster level's default
  int max_victims = 0;  // 0: the cluster level's default
  std::string topology_dir;
  std::string preset;
  int nodes = 0;
  ApiServerFlags api;
  std::string write_token_file;
  std::int64_t max_body = 8 << 20;
  double timeout_s = 5;
  double request_timeout_s = 10;
  int max_connections = 512;
  int threads = 0;          // 0: one per core, 2 to 8
  std::string numa_memory;  // bytes or a quantity; "": unknown NUMA memory stays unknown
  // Leader election over a Lease (needs the API server): one replica serves, the others wait.
  bool leader_elect = false;
  std::string lease_name = "tessera-extender";
  std::string lease_namespace;  // "": $POD_NAMESPACE, else kube-system
  std::string identity;         // "": $POD_NAME, else HOSTNAME-PID
};

void add_extender_options(CLI::App& command, ExtenderFlags& flags);
// Serves until SIGINT or SIGTERM.
Outcome run_extender_command(const ExtenderFlags& flags);

// "host:port", "[::1]:port" or ":port" (loopback). Exposed for tests.
core::Status parse_listen(const std::string& text, std::string& host, int& port);

// Every NODE.json / NODE.xml of `dir` into `service`, as node NODE. A file that cannot be read or
// put is logged with its error and skipped; an error only when none could be. Returns the nodes
// loaded. Exposed for tests.
core::Result<int> load_topology_dir(k8s::ExtenderService& service, const std::string& dir);

}  // namespace tessera::cli
