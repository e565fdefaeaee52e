#include "tessera/dra/dra_grpc.hpp"

#include <grpcpp/grpcpp.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "dra_v1.grpc.pb.h"
#include "pluginregistration_v1.grpc.pb.h"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::dra {

namespace dra_v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace reg_v1 = ::pluginregistration;

class RegistrationService final : public reg_v1::Registration::Service {
 public:
  RegistrationService(std::string driver, std::string endpoint,
                      std::shared_ptr<std::atomic<int>> state)
      : driver_(std::move(driver)), endpoint_(std::move(endpoint)), state_(std::move(state)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const reg_v1::InfoRequest*,
                       reg_v1::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(driver_);
    info->set_endpoint(endpoint_);
    info->add_supported_versions(std::string(kDraServiceVersion));
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const reg_v1::RegistrationStatus* status,
                                        reg_v1::RegistrationStatusResponse*) override {
    state_->store(status->plugin_registered() ? 1 : -1);
    if (status->plugin_registered()) {
      core::logger().info("the kubelet registered the DRA driver {}", driver_);
    } else {
      core::logger().error("the kubelet refused the DRA driver {}: {}", driver_, status->error());
    }
    return grpc::Status::OK;
  }

 private:
  std::string driver_;
  std::string endpoint_;
  std::shared_ptr<std::atomic<int>> state_;
};

namespace {

// A claim as the kubelet sent it, checked: every field is required.
core::Result<ClaimRef> claim_ref(const dra_v1::Claim& c) {
  if (c.uid().empty() || c.namespace_().empty() || c.name().empty()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "claim '{}/{}' (uid '{}'): namespace, name and uid are all required",
                       c.namespace_(), c.name(), c.uid());
  }
  return ClaimRef{.ns = c.namespace_(), .name = c.name(), .uid = c.uid()};
}

}  // namespace

class NodeService final : public dra_v1::DRAPlugin::Service {
 public:
  explicit NodeService(DraDriver& driver) : driver_(driver) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const dra_v1::NodePrepareResourcesRequest* request,
                                    dra_v1::NodePrepareResourcesResponse* response) override {
    for (const auto& c : request->claims()) {
      dra_v1::NodePrepareResourceResponse& out = (*response->mutable_claims())[c.uid()];
      const auto ref = claim_ref(c);
      const auto prepared =
          ref ? driver_.prepare(*ref)
              : core::Result<std::vector<PreparedDevice>>(std::unexpected(ref.error()));
      if (!prepared) {
        core::logger().warn("NodePrepareResources: {}", prepared.error().message());
        out.set_error(prepared.error().message());
        continue;
      }
      for (const PreparedDevice& d : *prepared) {
        dra_v1::Device* device = out.add_devices();
        device->add_request_names(d.request);
        device->set_pool_name(d.pool);
        device->set_device_name(d.device);
        for (const auto& id : d.cdi_ids) device->add_cdi_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const dra_v1::NodeUnprepareResourcesRequest* request,
                                      dra_v1::NodeUnprepareResourcesResponse* response) override {
    for (const auto& c : request->claims()) {
      dra_v1::NodeUnprepareResourceResponse& out = (*response->mutable_claims())[c.uid()];
      const auto ref = claim_ref(c);
      const auto done = ref ? driver_.unprepare(*ref) : core::Status(std::unexpected(ref.error()));
      if (!done) {
        core::logger().warn("NodeUnprepareResources: {}", done.error().message());
        out.set_error(done.error().message());
      }
    }
    return grpc::Status::OK;
  }

 private:
  DraDriver& driver_;
};

namespace {

// Makes the socket's folder and removes a socket file left by an earlier run (gRPC does not bind
// over an existing file).
core::Status prepare_socket(const std::string& path) {
  std::error_code ec;
  const auto folder = std::filesystem::path(path).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder, ec);
  if (ec) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "cannot make the folder of socket {}: {}", path, ec.message());
  }
  if (std::filesystem::is_socket(path, ec)) std::filesystem::remove(path, ec);
  if (std::filesystem::exists(path, ec)) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "{} exists and is not a socket: not replacing it", path);
  }
  return {};
}

}  // namespace

core::Result<std::unique_ptr<DraPluginServer>> DraPluginServer::start(DraDriver& driver,
                                                                      PluginSockets sockets) {
  for (const auto* path : {&sockets.registration, &sockets.dra}) TESSERA_TRY(prepare_socket(*path));
  std::unique_ptr<DraPluginServer> server(new DraPluginServer());
  server->sockets_ = sockets;
  server->registration_ = std::make_shared<std::atomic<int>>(0);
  server->registration_service_ = std::make_unique<RegistrationService>(
      driver.options().driver_name, sockets.dra, server->registration_);
  server->node_service_ = std::make_unique<NodeService>(driver);
  grpc::ServerBuilder builder;
  int registration_bound = 0;
  int dra_bound = 0;
  builder.AddListeningPort("unix:" + sockets.registration, grpc::InsecureServerCredentials(),
                           &registration_bound);
  builder.AddListeningPort("unix:" + sockets.dra, grpc::InsecureServerCredentials(), &dra_bound);
  builder.RegisterService(server->registration_service_.get());
  builder.RegisterService(server->node_service_.get());
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || registration_bound == 0 || dra_bound == 0) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "cannot serve the DRA plugin on {} and {} (is another plugin running?)",
                       sockets.registration, sockets.dra);
  }
  return server;
}

void DraPluginServer::shutdown() {
  if (!server_) return;
  server_->Shutdown();
  server_->Wait();
  server_.reset();
  std::error_code ec;
  std::filesystem::remove(sockets_.registration, ec);
  std::filesystem::remove(sockets_.dra, ec);
}

DraPluginServer::~DraPluginServer() {
  shutdown();
}

}  // namespace tessera::dra
