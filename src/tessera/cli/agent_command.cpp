#include "tessera/cli/agent_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <thread>

#include "tessera/cli/node_name.hpp"
#include "tessera/cli/stop_signals.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/sources.hpp"
#include "tessera/k8s/agent_http.hpp"
#include "tessera/k8s/agent_push.hpp"
#include "tessera/k8s/bearer_token.hpp"
#include "tessera/k8s/node_agent.hpp"
#include "tessera/k8s/nrt_publisher.hpp"

namespace tessera::cli {
namespace {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// HOST:PORT, or [IPV6]:PORT.
core::Result<ListenAddress> parse_listen(const std::string& text) {
  static const std::regex kAddress(R"(^(\[[0-9a-fA-F:.]+\]|[^:\[\]\s]+):([0-9]{1,5})$)");
  std::smatch m;
  if (!std::regex_match(text, m, kAddress) || std::stoi(m[2].str()) > 65535) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "--listen '{}': expected HOST:PORT, e.g. 127.0.0.1:9400 (0.0.0.0:9400 to "
                       "serve every interface)",
                       text);
  }
  std::string host = m[1].str();
  if (host.front() == '[') host = host.substr(1, host.size() - 2);
  return ListenAddress{host, std::stoi(m[2].str())};
}

core::Status print_once(const k8s::NodeAgent& agent, const std::string& format) {
  if (format == "topology") {
    fmt::print("{}\n", agent.topology_json().dump(2));
    return {};
  }
  TESSERA_ASSIGN_OR_RETURN(const nlohmann::json nrt, agent.node_resource_topology());
  if (format == "nrt") {
    fmt::print("{}\n", nrt.dump(2));
  } else {
    fmt::print("{}", k8s::to_yaml(nrt));
  }
  return {};
}

// Publishes the NodeResourceTopology when it changed or its period came round; says what failed.
void publish_nrt(k8s::NrtPublisher& publisher, const k8s::NodeAgent& agent) {
  auto nrt = agent.node_resource_topology();
  if (!nrt) {
    core::logger().warn("agent: no NodeResourceTopology to publish: {}", nrt.error().message());
    return;
  }
  const k8s::NrtPublisher::Outcome o = publisher.maybe_publish(*nrt);
  if (o.error) {
    core::logger().warn("agent: {}; retrying next period", o.error->message());
  } else if (o.attempted) {
    core::logger().info("agent: NodeResourceTopology published");
  }
}

void log_tick(const k8s::TickReport& r, const k8s::TopologyPusher* pusher,
              const std::string& node) {
  auto& log = core::logger();
  if (r.refresh_error) log.warn("agent: {}; serving the topology found before", *r.refresh_error);
  if (r.refresh && r.refresh->changed) {
    log.info("agent: the topology changed (generation {})", r.refresh->generation);
    for (const auto& pod : r.refresh->dropped_pods) {
      log.warn("agent: pod '{}' held components the node no longer has; dropped", pod);
    }
  }
  if (r.push_error) {
    log.warn("agent: {}; retrying next period", *r.push_error);
  } else if (r.pushed && pusher != nullptr) {
    log.info("agent: pushed the topology to {}", pusher->target(node));
  }
}

}  // namespace

void add_agent_options(CLI::App& command, AgentFlags& f) {
  CLI::App* c = &command;
  c->add_option("--listen", f.listen, "HOST:PORT to serve on (loopback unless told otherwise)")
      ->capture_default_str();
  c->add_option("--node", f.node,
                "Kubernetes node name (default: $NODE_NAME, else the hostname in lowercase)");
  c->add_option("--refresh", f.refresh, "Rediscover (and push) every this long, e.g. 30s or 5m")
      ->capture_default_str();
  c->add_option("--push", f.push_url,
                "Scheduler extender to push the topology to, e.g. http://127.0.0.1:8888");
  c->add_option("--push-ca", f.push_ca, "PEM CA bundle to verify an https --push URL with");
  c->add_option("--push-cert", f.push_cert,
                "PEM client certificate for an extender that requires one (its --client-ca)");
  c->add_option("--push-key", f.push_key, "PEM private key of --push-cert");
  c->add_option("--push-token-file", f.push_token_file,
                "Bearer token for --push (the extender's --write-token-file)");
  c->add_option("--topology", f.topology_file,
                "Serve this topology file (hwloc XML, NCCL XML or tessera JSON) instead of "
                "discovering the host; re-read every period");
  c->add_option("--cert", f.cert, "PEM certificate chain: serve HTTPS (with --key)");
  c->add_option("--key", f.key, "PEM private key of --cert");
  c->add_option("--client-ca", f.client_ca,
                "PEM CA bundle: require every client to present a certificate it signs (mutual "
                "TLS; needs --cert)");
  c->add_flag("--once", f.once, "Print the topology and exit (no server)");
  c->add_option("--format", f.format, "With --once: topology (JSON), nrt (JSON) or nrt-yaml")
      ->check(CLI::IsMember({"topology", "nrt", "nrt-yaml"}))
      ->capture_default_str();
  c->add_option("--cores-per-group", f.cores_per_group,
                "Physical cores per CPU core group (FlexTopo's allocation unit)")
      ->capture_default_str();
  c->add_option("--topology-manager-policy", f.tm_policy,
                "The kubelet's --topology-manager-policy, reported in the NodeResourceTopology")
      ->capture_default_str();
  c->add_option("--topology-manager-scope", f.tm_scope,
                "The kubelet's --topology-manager-scope, reported in the NodeResourceTopology")
      ->capture_default_str();
  c->add_option("--numa-memory", f.numa_memory,
                "Memory of each NUMA node the topology gives no size for (NCCL XML), in bytes or "
                "as a quantity (64Gi); without it such memory is unknown and not counted");
  c->add_option("--reserved-cpus", f.reserved_cpus,
                "The kubelet's --reserved-cpus (e.g. 0-1,64-65): their cores go in no core group "
                "and the NodeResourceTopology's allocatable leaves them out");
  add_api_server_options(
      *c, f.api,
      "to publish this node's NodeResourceTopology to (server-side apply; the CRD of "
      "topology.node.k8s.io/v1alpha2 must be installed)");
  c->add_option("--reserved-memory", f.reserved_memory,
                "The kubelet's --reserved-memory (e.g. 0:memory=1Gi; repeat per NUMA node): kept "
                "out of what pods get and of the NodeResourceTopology's allocatable");
}

Outcome run_agent_command(const AgentFlags& f) {
  k8s::AgentOptions options;
  options.node_name = node_name_or_default(f.node);
  TESSERA_ASSIGN_OR_RETURN(options.refresh_period,
                           core::with_context(core::parse_duration(f.refresh), "--refresh"));
  options.nrt.topology_manager_policy = f.tm_policy;
  options.nrt.topology_manager_scope = f.tm_scope;
  if (f.cores_per_group < 1) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "--cores-per-group {}: must be at least 1", f.cores_per_group);
  }
  hw::TopologyOptions topo;
  topo.cores_per_group = f.cores_per_group;
  if (!f.numa_memory.empty()) {
    TESSERA_ASSIGN_OR_RETURN(topo.numa_memory_bytes,
                             k8s::parse_bytes(f.numa_memory, "--numa-memory"));
  }
  TESSERA_ASSIGN_OR_RETURN(topo.reserved_cpus, k8s::parse_cpu_list(f.reserved_cpus));
  TESSERA_ASSIGN_OR_RETURN(topo.reserved_memory_bytes,
                           k8s::parse_reserved_memory(f.reserved_memory));
  k8s::DiscoverFn discover = [file = f.topology_file, topo] {
    return file.empty() ? hw::discover_host(topo) : hw::load_topology_file(file, topo);
  };

  core::SystemClock clock;
  TESSERA_ASSIGN_OR_RETURN(auto agent,
                           core::with_context(k8s::NodeAgent::create(options, discover, clock),
                                              fmt::format("node '{}'", options.node_name)));
  if (f.once) return print_once(*agent, f.format);
  StopSignals stop_signals;  // before any thread starts

  const auto topology = agent->topology();
  fmt::print(stderr,
             "tessera agent: node {} ({}): {} sockets, {} NUMA nodes, {} core groups of {} "
             "cores, {} GPUs\n",
             options.node_name, topology->source(), topology->sockets().size(),
             topology->numa_nodes().size(), topology->core_groups().size(), f.cores_per_group,
             topology->gpus().size());
  if (topology->gpus().empty()) {
    fmt::print(stderr,
               "tessera agent: no GPU found on this node; serving its topology with 0 GPUs\n");
  }

  std::unique_ptr<k8s::TopologyPusher> pusher;
  if (!f.push_url.empty()) {
    k8s::PushOptions push;
    push.url = f.push_url;
    push.ca_file = f.push_ca;
    push.cert_file = f.push_cert;
    push.key_file = f.push_key;
    if (!f.push_token_file.empty()) {
      TESSERA_ASSIGN_OR_RETURN(
          push.token, k8s::read_bearer_token(f.push_token_file, "extender write token file",
                                             "--push-token-file"));
    }
    TESSERA_ASSIGN_OR_RETURN(pusher,
                             core::with_context(k8s::TopologyPusher::create(push), "--push"));
  }

  std::unique_ptr<k8s::NrtPublisher> publisher;
  TESSERA_ASSIGN_OR_RETURN(auto api_server, api_server_config(f.api));
  if (api_server) {
    TESSERA_ASSIGN_OR_RETURN(auto client, k8s::ApiServerClient::create(std::move(*api_server)));
    publisher =
        std::make_unique<k8s::NrtPublisher>(std::move(client), options.refresh_period, clock);
  }

  TESSERA_ASSIGN_OR_RETURN(const ListenAddress listen, parse_listen(f.listen));
  k8s::HttpServerOptions server_options;
  server_options.host = listen.host;
  server_options.port = listen.port;
  server_options.cert_file = f.cert;
  server_options.client_ca_file = f.client_ca;
  server_options.key_file = f.key;
  // The agent's bodies are small: an allocation set of a few hundred pods.
  server_options.max_body_bytes = std::size_t{1} << 20;
  TESSERA_ASSIGN_OR_RETURN(auto server, k8s::HttpServer::create(server_options));
  k8s::NodeAgent& a = *agent;
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  bool allocations_changed = false;  // the NodeResourceTopology to publish changed
  k8s::add_agent_routes(*server, a, [&] {
    core::logger().info("agent: allocations changed (generation {})", a.generation());
    std::lock_guard lock(mu);
    allocations_changed = true;
    wake.notify_all();
  });

  TESSERA_TRY(server->start());
  fmt::print(stderr, "tessera agent: serving on {}://{}:{}{}\n", server->tls() ? "https" : "http",
             listen.host, server->port(),
             pusher ? fmt::format(", pushing to {}", pusher->target(options.node_name)) : "");

  k8s::PushFn push_fn;
  if (pusher) {
    push_fn = [&pusher](const std::string& node, const hw::HostTopology& t) {
      return pusher->push(node, t);
    };
  }
  k8s::AgentLoop loop(a, push_fn, clock);
  std::thread loop_thread([&] {
    std::unique_lock lock(mu);
    while (!stop) {
      lock.unlock();
      log_tick(loop.tick(), pusher.get(), options.node_name);
      if (publisher) publish_nrt(*publisher, a);
      const core::Nanos wait = std::max<core::Nanos>(loop.next_wake() - clock.now(), 0);
      lock.lock();
      wake.wait_for(lock, std::chrono::nanoseconds(wait),
                    [&] { return stop || allocations_changed; });
      allocations_changed = false;
    }
  });

  fmt::print(stderr, "tessera agent: {}, stopping\n", stop_signals.wait());
  {
    std::lock_guard lock(mu);
    stop = true;
  }
  wake.notify_all();
  loop_thread.join();
  server->stop();
  return {};
}

}  // namespace tessera::cli
