// A test kubelet: it finds the plugin on its registration socket, asks who it is, says it is
// registered, then prepares and unprepares claims over the DRA socket the registration announced,
// with a restart of the plugin in between. The claims come from an API server that speaks the
// real wire format.
#include "tessera/dra/dra_grpc.hpp"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../k8s/fake_api_server.hpp"
#include "claim_fixtures.hpp"
#include "dra_v1.grpc.pb.h"
#include "fake_driver_parts.hpp"
#include "pluginregistration_v1.grpc.pb.h"
#include "scratch_dir.hpp"
#include "tessera/dra/api_claim_source.hpp"

namespace tessera::dra {
namespace {

namespace fs = std::filesystem;
namespace dra_v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;

constexpr const char* kUid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f";

class DraGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::scratch_dir("dra-grpc");
    fs::create_directories(root_ / "cdi");
    std::ofstream(root_ / "token") << "test-token\n";
    sockets_ = {.registration = (root_ / "registry" / "gpu.tessera.io-reg.sock").string(),
                .dra = (root_ / "plugins" / "dra.sock").string()};
    start();
  }
  void TearDown() override {
    server_.reset();
    driver_.reset();
    fs::remove_all(root_);
  }

  void start() {
    auto client = tessera::k8s::ApiServerClient::create(
        {.url = api_.url(), .token_file = (root_ / "token").string(), .ca_file = ""});
    ASSERT_TRUE(client) << client.error().message();
    claims_ = std::make_unique<ApiClaimSource>(std::move(*client));
    DriverOptions o;
    o.node_name = "node-a";
    o.cdi_dir = (root_ / "cdi").string();
    o.checkpoint_path = (root_ / "checkpoint.json").string();
    auto driver = DraDriver::open(o, *claims_, grants_);
    ASSERT_TRUE(driver) << driver.error().message();
    driver_ = std::move(*driver);
    auto server = DraPluginServer::start(*driver_, sockets_);
    ASSERT_TRUE(server) << server.error().message();
    server_ = std::move(*server);
  }
  void restart() {
    server_.reset();
    driver_.reset();
    start();
  }

  static std::shared_ptr<grpc::Channel> channel(const std::string& socket) {
    return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  }
  static dra_v1::Claim claim(const std::string& name, const std::string& uid) {
    dra_v1::Claim c;
    c.set_namespace_("serving");
    c.set_name(name);
    c.set_uid(uid);
    return c;
  }
  // One call of the DRA service, as the kubelet makes it, with `claims`.
  template <class Request, class Response>
  Response call(grpc::Status (dra_v1::DRAPlugin::Stub::*method)(grpc::ClientContext*,
                                                                const Request&, Response*),
                std::initializer_list<dra_v1::Claim> claims) {
    Request request;
    for (const auto& c : claims) *request.add_claims() = c;
    Response response;
    grpc::ClientContext context;
    const auto stub = dra_v1::DRAPlugin::NewStub(channel(sockets_.dra));
    const grpc::Status status = ((*stub).*method)(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
  dra_v1::NodePrepareResourcesResponse prepare(std::initializer_list<dra_v1::Claim> claims) {
    return call(&dra_v1::DRAPlugin::Stub::NodePrepareResources, claims);
  }
  dra_v1::NodeUnprepareResourcesResponse unprepare(std::initializer_list<dra_v1::Claim> claims) {
    return call(&dra_v1::DRAPlugin::Stub::NodeUnprepareResources, claims);
  }
  int claim_reads() {
    int n = 0;
    for (const auto& r : api_.requests()) n += r.method == "GET" ? 1 : 0;
    return n;
  }

  test::FakeApiServer api_{[](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" && req.path ==
                                   "/apis/resource.k8s.io/v1/namespaces/serving/resourceclaims/"
                                   "vllm-7d9f8-gpu-x2k4p") {
      res.status = 200;
      res.set_content(test::allocated_claim().dump(), "application/json");
    } else {
      test::status_answer(res, 404, "resourceclaims.resource.k8s.io \"gone\" not found");
    }
  }};
  fs::path root_;
  PluginSockets sockets_;
  test::FakeGrants grants_;
  std::unique_ptr<ApiClaimSource> claims_;
  std::unique_ptr<DraDriver> driver_;
  std::unique_ptr<DraPluginServer> server_;
};

TEST_F(DraGrpcTest, TheKubeletRegistersThePlugin) {
  auto registration = ::pluginregistration::Registration::NewStub(channel(sockets_.registration));
  ::pluginregistration::PluginInfo info;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(registration->GetInfo(&context, {}, &info).ok());
  }
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.tessera.io");
  EXPECT_EQ(info.endpoint(), sockets_.dra);
  ASSERT_EQ(info.supported_versions_size(), 1);
  EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
  EXPECT_EQ(server_->registration_state(), 0);
  ::pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  ::pluginregistration::RegistrationStatusResponse reply;
  grpc::ClientContext context;
  ASSERT_TRUE(registration->NotifyRegistrationStatus(&context, status, &reply).ok());
  EXPECT_EQ(server_->registration_state(), 1);
}

TEST_F(DraGrpcTest, ClaimsArePreparedOneByOneAndIdempotentlyAcrossRestarts) {
  const auto response =
      prepare({claim("vllm-7d9f8-gpu-x2k4p", kUid), claim("gone", "uid-2"), claim("", "uid-3")});
  ASSERT_EQ(response.claims_size(), 3);
  const auto& good = response.claims().at(kUid);
  EXPECT_EQ(good.error(), "");
  ASSERT_EQ(good.devices_size(), 1);
  EXPECT_EQ(good.devices(0).pool_name(), "node-a");
  EXPECT_EQ(good.devices(0).device_name(), "gpu-0");
  EXPECT_EQ(good.devices(0).request_names(0), "gpu");
  ASSERT_EQ(good.devices(0).cdi_device_ids_size(), 2);
  EXPECT_EQ(good.devices(0).cdi_device_ids(0),
            std::string("gpu.tessera.io/claim=") + kUid + "-gpu-0");
  EXPECT_NE(response.claims().at("uid-2").error().find("not on the API server"), std::string::npos);
  EXPECT_NE(response.claims().at("uid-3").error().find("are all required"), std::string::npos);
  EXPECT_TRUE(fs::exists(root_ / "cdi" / (std::string("gpu.tessera.io-claim_") + kUid + ".json")));
  const int reads = claim_reads();

  restart();
  const auto again = prepare({claim("vllm-7d9f8-gpu-x2k4p", kUid)});
  EXPECT_EQ(again.claims().at(kUid).devices(0).cdi_device_ids(0),
            good.devices(0).cdi_device_ids(0));
  EXPECT_EQ(claim_reads(), reads);
  EXPECT_EQ(grants_.granted.size(), 1u);

  for (int i = 0; i < 2; ++i) {
    const auto undone = unprepare({claim("vllm-7d9f8-gpu-x2k4p", kUid)});
    EXPECT_EQ(undone.claims().at(kUid).error(), "");
  }
  EXPECT_FALSE(fs::exists(root_ / "cdi" / (std::string("gpu.tessera.io-claim_") + kUid + ".json")));
  EXPECT_EQ(grants_.revoked, std::vector<std::string>{kUid});
}

}  // namespace
}  // namespace tessera::dra
