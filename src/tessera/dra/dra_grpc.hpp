#pragma once
// The kubelet's side of tessera's DRA driver: the plugin registration service (the kubelet finds
// the plugin by its socket in plugins_registry and asks who it is) and the DRA node service
// (k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin), both gRPC over Unix sockets, served by one
// server. Each claim of a request is prepared or unprepared on its own: one claim's error is
// reported in its entry of the answer and does not fail the others.

#include <atomic>
#include <memory>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/dra/dra_driver.hpp"

namespace grpc {
class Server;
}

namespace tessera::dra {

struct PluginSockets {
  // Where the kubelet's plugin watcher looks for plugins.
  std::string registration = "/var/lib/kubelet/plugins_registry/gpu.tessera.io-reg.sock";
  // The DRA service, the endpoint the registration announces.
  std::string dra = "/var/lib/kubelet/plugins/gpu.tessera.io/dra.sock";
};

// The service names a registration lists, as "<version>.<service>".
inline constexpr std::string_view kDraServiceVersion = "v1.DRAPlugin";

class RegistrationService;
class NodeService;

class DraPluginServer {
 public:
  // Serves `driver` on both sockets (their folders made if missing; a stale socket file
  // replaced). Fails naming the socket that cannot be bound.
  static core::Result<std::unique_ptr<DraPluginServer>> start(DraDriver& driver,
                                                              PluginSockets sockets);
  ~DraPluginServer();
  DraPluginServer(const DraPluginServer&) = delete;
  DraPluginServer& operator=(const DraPluginServer&) = delete;

  // Stops accepting calls and waits for those in progress; removes the socket files.
  void shutdown();
  // What the kubelet last said of the registration: 0 nothing yet, 1 registered, -1 refused.
  int registration_state() const { return registration_->load(); }

 private:
  DraPluginServer() = default;

  PluginSockets sockets_;
  std::shared_ptr<std::atomic<int>> registration_;
  std::unique_ptr<RegistrationService> registration_service_;
  std::unique_ptr<NodeService> node_service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace tessera::dra
