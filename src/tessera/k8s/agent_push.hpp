#pragma once
// The agent's side of the extender's topology protocol: PUT
// {URL}/tessera/v1/nodes/{node}/topology with {"node": NAME, "topology": hw::to_json(topology)},
// the route `tessera extender` serves (extender_service.hpp). Over HTTP or HTTPS (cpp-httplib's
// client, keep-alive); a failure is an error value naming the URL and what went wrong, for the
// caller to log and retry.

#include <chrono>
#include <memory>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::k8s {

struct PushOptions {
  // http://HOST:PORT or https://HOST:PORT, optionally with a path prefix ("https://x:8888/api").
  std::string url;
  // HTTPS: verify the extender's certificate against this PEM CA bundle (else the system's).
  std::string ca_file;
  // HTTPS: this PEM certificate and key identify the agent to an extender that requires client
  // certificates (its --client-ca). Both or neither.
  std::string cert_file;
  std::string key_file;
  // Sent as "Authorization: Bearer <token>" when set (the extender's --write-token-file).
  std::string token;
  std::chrono::milliseconds timeout{5000};
};

class TopologyPusher {
 public:
  // Fails (kK8s, kInvalidArgument) when the URL is not http(s)://host[:port][/prefix], or a
  // client certificate is given without its key (or for plain HTTP) or cannot be loaded.
  static core::Result<std::unique_ptr<TopologyPusher>> create(PushOptions options);
  ~TopologyPusher();
  TopologyPusher(const TopologyPusher&) = delete;
  TopologyPusher& operator=(const TopologyPusher&) = delete;

  // One PUT; succeeds on a 2xx answer. Not thread-safe: one loop pushes.
  core::Status push(const std::string& node, const hw::HostTopology& topology);
  // The full URL a push for `node` goes to.
  std::string target(const std::string& node) const;

 private:
  struct Impl;
  explicit TopologyPusher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::k8s
