#include "tessera/cli/extender_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "tessera/cli/stop_signals.hpp"
#include "tessera/cluster/policy/preemption.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/hw/topology/sources.hpp"
#include "tessera/k8s/bearer_token.hpp"
#include "tessera/k8s/binder.hpp"
#include "tessera/k8s/extender_service.hpp"
#include "tessera/k8s/http_server.hpp"
#include "tessera/k8s/lease_elector.hpp"
#include "tessera/k8s/node_resource_topology.hpp"
#include "tessera/k8s/pod_watcher.hpp"

namespace tessera::cli {

core::Result<int> load_topology_dir(k8s::ExtenderService& service, const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                       "--topology-dir {}: not a directory", dir);
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".json" || ext == ".xml")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                       "--topology-dir {}: no NODE.json or NODE.xml files", dir);
  }
  // One bad file costs its node, not the others: it is named and skipped.
  int loaded = 0;
  for (const auto& f : files) {
    const std::string node = f.stem().string();
    auto t = hw::load_topology_file(f.string());
    std::optional<core::Error> failed;
    if (!t) {
      failed = t.error();
    } else if (auto put = service.put_topology(
                   node, std::make_shared<const hw::HostTopology>(std::move(*t)));
               !put) {
      failed = put.error();
    }
    if (failed) {
      core::logger().error("--topology-dir: {} skipped, node {} not loaded: {}", f.string(), node,
                           failed->message());
      continue;
    }
    core::logger().info("node {}: topology from {}", node, f.string());
    ++loaded;
  }
  if (loaded == 0) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "--topology-dir {}: none of its {} topology files could be loaded (each "
                       "error above)",
                       dir, files.size());
  }
  return loaded;
}

namespace {

core::Status load_preset(k8s::ExtenderService& service, const std::string& preset, int nodes) {
  if (nodes <= 0) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--preset needs --nodes N (N >= 1)");
  }
  for (int i = 0; i < nodes; ++i) {
    const std::string node = fmt::format("node{:03}", i);
    TESSERA_ASSIGN_OR_RETURN(auto t, hw::preset(preset, node));
    TESSERA_TRY(service.put_topology(node, std::make_shared<const hw::HostTopology>(std::move(t))));
  }
  core::logger().info("{} nodes node000.. from preset {}", nodes, preset);
  return {};
}

// $POD_NAME (the downward API), else HOSTNAME-PID.
std::string default_identity() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return fmt::format("{}-{}", host, getpid());
}

core::Result<std::shared_ptr<k8s::Binder>> make_binder(
    const std::optional<k8s::ApiServerConfig>& api) {
  if (!api) return std::shared_ptr<k8s::Binder>(std::make_shared<k8s::RecordOnlyBinder>());
  TESSERA_ASSIGN_OR_RETURN(auto b, k8s::ApiServerBinder::create(*api));
  return std::shared_ptr<k8s::Binder>(std::move(b));
}

}  // namespace

core::Status parse_listen(const std::string& text, std::string& host, int& port) {
  auto bad = [&] {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "--listen '{}': expected HOST:PORT, [IPv6]:PORT or :PORT (port 0-65535)",
                       text);
  };
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return bad();
  host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  const std::string p = text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (p.empty() || ec != std::errc{} || end != p.data() + p.size() || port < 0 || port > 65535) {
    return bad();
  }
  return {};
}

void add_extender_options(CLI::App& command, ExtenderFlags& f) {
  CLI::App* c = &command;
  c->add_option("--listen", f.listen, "HOST:PORT to serve on (loopback unless told otherwise)")
      ->capture_default_str();
  c->add_option("--cert", f.cert, "PEM certificate chain: serve HTTPS (needs --key)");
  c->add_option("--key", f.key, "PEM private key of --cert");
  c->add_option("--client-ca", f.client_ca,
                "PEM CA bundle: require every client (kube-scheduler, the agents) to present a "
                "certificate it signs (mutual TLS; needs --cert)");
  c->add_option("--url-prefix", f.url_prefix,
                "Path before the verbs, the path of urlPrefix in the scheduler config "
                "(e.g. /tessera)");
  c->add_option(
       "--method", f.method,
       fmt::format("Preemption search: {} (`tessera list`)", cluster::preemption_method_names()))
      ->capture_default_str();
  c->add_option("--alpha", f.alpha,
                "Weight of the priority term in S(C) (0-1); default: the cluster level's");
  c->add_option("--max-victims", f.max_victims, "Largest victim set searched; default: 4");
  c->add_option("--topology-dir", f.topology_dir,
                "Load NODE.json / NODE.xml topology files (tessera JSON, hwloc or NCCL XML) at "
                "start");
  c->add_option("--numa-memory", f.numa_memory,
                "Memory of each NUMA node a topology gives no size for (NCCL XML), in bytes or as "
                "a quantity (64Gi); without it the filter does not count memory there");
  c->add_option("--preset", f.preset, "Generate --nodes nodes of this preset (tests, demos)");
  c->add_option("--nodes", f.nodes, "How many nodes --preset makes");
  add_api_server_options(*c, f.api,
                         "to create Bindings at and keep the state from (its bound pods, listed "
                         "and watched); without it bindings are only recorded");
  c->add_flag("--leader-elect", f.leader_elect,
              "Run as one of several replicas: only the holder of the Lease serves the verbs and "
              "is ready (/readyz); the others keep their state current and take over when it "
              "stops renewing (needs --apiserver or --in-cluster)");
  c->add_option("--lease-name", f.lease_name, "The Lease's name")->capture_default_str();
  c->add_option("--lease-namespace", f.lease_namespace,
                "The Lease's namespace (default: $POD_NAMESPACE, else kube-system)");
  c->add_option("--identity", f.identity,
                "This replica's name in the Lease (default: $POD_NAME, else HOSTNAME-PID)");
  c->add_option("--write-token-file", f.write_token_file,
                "Bearer token that topology PUTs and pod releases must carry");
  c->add_option("--max-body", f.max_body, "Largest request body in bytes")->capture_default_str();
  c->add_option("--timeout", f.timeout_s,
                "Close a connection silent this long (mid-request or idle between requests), "
                "seconds")
      ->capture_default_str();
  c->add_option("--request-timeout", f.request_timeout_s,
                "Longest one request may take, request line to response, seconds")
      ->capture_default_str();
  c->add_option("--max-connections", f.max_connections, "Connections served at once")
      ->capture_default_str();
  c->add_option("--threads", f.threads,
                "Threads that serve connections and run the verbs (0: one per core, 2 to 8)")
      ->capture_default_str();
}

Outcome run_extender_command(const ExtenderFlags& f) {
  StopSignals stop_signals;  // before any thread starts
  k8s::ExtenderConfig config;
  TESSERA_ASSIGN_OR_RETURN(config.method, cluster::parse_preemption_method(f.method));
  if (f.alpha >= 0) {
    if (f.alpha > 1) {
      return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                         "--alpha {}: must be within 0-1", f.alpha);
    }
    config.preemption.alpha = f.alpha;
  }
  if (f.max_victims < 0) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--max-victims must be at least 1");
  }
  if (f.max_victims > 0) config.preemption.max_victims = f.max_victims;
  config.url_prefix = f.url_prefix;
  if (!f.write_token_file.empty()) {
    TESSERA_ASSIGN_OR_RETURN(config.write_token,
                             k8s::read_bearer_token(f.write_token_file, "extender write token file",
                                                    "--write-token-file"));
  }
  if (!f.numa_memory.empty()) {
    TESSERA_ASSIGN_OR_RETURN(config.numa_memory_bytes,
                             k8s::parse_bytes(f.numa_memory, "--numa-memory"));
  }
  if (!f.topology_dir.empty() && !f.preset.empty()) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "give --topology-dir or --preset, not both");
  }
  if (f.max_body <= 0) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--max-body must be positive");
  }
  if (!(f.timeout_s > 0)) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--timeout must be positive");
  }
  if (!(f.request_timeout_s > 0)) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--request-timeout must be positive");
  }
  if (f.max_connections < 1) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--max-connections must be at least 1");
  }
  if (f.threads < 0) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--threads must be at least 1, or 0 for one per core");
  }
  TESSERA_ASSIGN_OR_RETURN(const std::optional<k8s::ApiServerConfig> api, api_server_config(f.api));
  config.pod_events = api.has_value();
  if (f.leader_elect && !api) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "--leader-elect needs the API server: give --apiserver or --in-cluster");
  }
  TESSERA_ASSIGN_OR_RETURN(auto binder, make_binder(api));
  k8s::ExtenderService service(config, binder);
  if (!f.topology_dir.empty()) TESSERA_TRY(load_topology_dir(service, f.topology_dir));
  if (!f.preset.empty()) TESSERA_TRY(load_preset(service, f.preset, f.nodes));

  k8s::HttpServerOptions options;
  TESSERA_TRY(parse_listen(f.listen, options.host, options.port));
  options.cert_file = f.cert;
  options.key_file = f.key;
  options.client_ca_file = f.client_ca;
  options.max_body_bytes = static_cast<std::size_t>(f.max_body);
  options.read_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(f.timeout_s * 1000));
  options.write_timeout = options.read_timeout;
  options.request_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(f.request_timeout_s * 1000));
  options.max_connections = f.max_connections;
  options.threads = f.threads;
  TESSERA_ASSIGN_OR_RETURN(auto server, k8s::HttpServer::create(options));
  service.register_routes(*server);
  // A replica under leader election starts as a standby: it serves nothing until it holds the
  // Lease.
  std::unique_ptr<k8s::LeaseElector> elector;
  std::atomic<bool> stopping{false};
  core::SystemClock clock;
  if (f.leader_elect) {
    service.set_leading(false);
    TESSERA_ASSIGN_OR_RETURN(k8s::ApiServerClient client, k8s::ApiServerClient::create(*api));
    k8s::LeaseOptions lease;
    lease.name = f.lease_name;
    lease.lease_namespace = !f.lease_namespace.empty()                ? f.lease_namespace
                            : std::getenv("POD_NAMESPACE") != nullptr ? std::getenv("POD_NAMESPACE")
                                                                      : "kube-system";
    lease.identity = !f.identity.empty() ? f.identity : default_identity();
    if (!k8s::safe_path_segment(lease.name) || !k8s::safe_path_segment(lease.lease_namespace)) {
      return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                         "--lease-name '{}' / --lease-namespace '{}': not Kubernetes names",
                         lease.name, lease.lease_namespace);
    }
    elector = std::make_unique<k8s::LeaseElector>(
        std::move(client), lease, clock,
        [&service](bool leading) { service.set_leading(leading); });
    core::logger().info("leader election: lease {}/{} as {}", lease.lease_namespace, lease.name,
                        lease.identity);
  }
  // The API server's pods keep the state: bound pods come back from their placement annotations,
  // pods that finish or are deleted leave it.
  std::unique_ptr<k8s::PodWatcher> watcher;
  if (api) {
    TESSERA_ASSIGN_OR_RETURN(k8s::ApiServerClient client, k8s::ApiServerClient::create(*api));
    watcher = std::make_unique<k8s::PodWatcher>(std::move(client), service);
  }
  TESSERA_TRY(server->start());
  // Nothing below returns early, so both threads are joined.
  std::thread electing;
  if (elector) {
    electing = std::thread([&] { elector->run([&] { return stopping.load(); }); });
  }
  std::thread watching;
  if (watcher) watching = std::thread([w = watcher.get()] { w->run([] { return false; }); });
  core::logger().info(
      "tessera extender on {}://{}:{}{} ({} nodes, preemption {}, alpha {}, binder {})",
      server->tls() ? "https" : "http", options.host, server->port(), f.url_prefix,
      service.node_count(), cluster::to_string(config.method), config.preemption.alpha,
      binder->describe());
  fmt::print("tessera extender listening on {}://{}:{}{}\n", server->tls() ? "https" : "http",
             options.host, server->port(), f.url_prefix);
  std::fflush(stdout);
  core::logger().info("{}: stopping", stop_signals.wait());
  stopping = true;
  if (elector) electing.join();  // gives the Lease up, so a standby takes over at once
  if (watcher) {
    watcher->cancel();
    watching.join();
  }
  server->stop();
  return {};
}

}  // namespace tessera::cli
