#pragma once
// `tessera agent`: the node agent. Discovers this node's topology (hwloc, or a file with
// --topology), serves it over HTTP (loopback by default: /healthz, /topology,
// /noderesourcetopology, /allocations), rediscovers it every --refresh period, and with --push
// sends it to the scheduler extender after each change and every period; with --apiserver (or
// --in-cluster) it also publishes its NodeResourceTopology object there. --once prints it and
// exits. Stops cleanly on SIGINT or SIGTERM.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "tessera/cli/api_server_flags.hpp"
#include "tessera/cli/command.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {

struct AgentFlags {
  CLI::App* command = nullptr;
  std::string listen = "127.0.0.1:9400";
  std::string node;  // default: $NODE_NAME, else the hostname in lowercase
  std::string refresh = "30s";
  std::string push_url;
  std::string push_ca;
  std::string push_cert;
  std::string push_key;
  std::string push_token_file;
  std::string topology_file;
  std::string cert;
  std::string key;
  std::string client_ca;
  bool once = false;
  std::string format = "topology";  // --once: topology | nrt | nrt-yaml
  int cores_per_group = 4;
  std::string tm_policy = "none";
  std::string tm_scope = "container";
  std::string numa_memory;                   // bytes or a quantity; "": unknown stays unknown
  std::string reserved_cpus;                 // the kubelet's --reserved-cpus
  std::vector<std::string> reserved_memory;  // the kubelet's --reserved-memory, repeatable
  ApiServerFlags api;                        // where to publish the NodeResourceTopology
};

// Adds `agent` to `app`; `flags` receives its values and must outlive parsing.
void add_agent_options(CLI::App& command, AgentFlags& flags);
// Runs it (when `*flags.command` is set); returns when stopped by a signal, or at once with --once.
Outcome run_agent_command(const AgentFlags& flags);

}  // namespace tessera::cli
