// NrtPublisher against a fake API server: the server-side apply's path, query, content type,
// token and body; when it applies again (a changed object, the period) and when not; the API
// server's refusal passed on with its reason.

#include "tessera/k8s/nrt_publisher.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tessera/core/clock.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

struct Applied {
  std::string path, field_manager, force, content_type, auth;
  json body;
};

class FakeApiServer {
 public:
  FakeApiServer() {
    server_.Patch(
        "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/([^/]+)",
        [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard lock(mu_);
          applied_.push_back({req.path, req.get_param_value("fieldManager"),
                              req.get_param_value("force"), req.get_header_value("Content-Type"),
                              req.get_header_value("Authorization"),
                              json::parse(req.body, nullptr, false)});
          if (refuse_) {
            res.status = 404;
            res.set_content(R"({"kind":"Status","status":"Failure","message":"the server could )"
                            R"(not find the requested resource","reason":"NotFound","code":404})",
                            "application/json");
            return;
          }
          res.status = 200;
          res.set_content(req.body, "application/json");
        });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<Applied> applied() {
    std::lock_guard lock(mu_);
    return applied_;
  }
  void refuse(bool r) {
    std::lock_guard lock(mu_);
    refuse_ = r;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Applied> applied_;
  bool refuse_ = false;
};

json nrt(const std::string& node, int free_gpus) {
  return {{"apiVersion", "topology.node.k8s.io/v1alpha2"},
          {"kind", "NodeResourceTopology"},
          {"metadata", {{"name", node}}},
          {"zones",
           {{{"name", "node-0"},
             {"type", "Node"},
             {"resources",
              {{{"name", "nvidia.com/gpu"}, {"available", std::to_string(free_gpus)}}}}}}}};
}

struct Publisher {
  FakeApiServer api;
  std::filesystem::path token =
      std::filesystem::temp_directory_path() / ("tessera_nrt_token_" + std::to_string(::getpid()));
  core::ManualClock clock;
  std::unique_ptr<NrtPublisher> publisher;
  Publisher() {
    std::ofstream(token) << "agent-token\n";
    ApiServerConfig c;
    c.url = "http://127.0.0.1:" + std::to_string(api.port());
    c.token_file = token.string();
    auto client = ApiServerClient::create(c);
    EXPECT_TRUE(client) << client.error().message();
    publisher = std::make_unique<NrtPublisher>(std::move(*client), core::seconds(30), clock);
  }
  ~Publisher() { std::filesystem::remove(token); }
};

TEST(NrtPublisher, AppliesTheObjectServerSideAsTheAgent) {
  Publisher p;
  const auto o = p.publisher->maybe_publish(nrt("gpu-node-1", 8));
  EXPECT_TRUE(o.attempted);
  ASSERT_FALSE(o.error) << o.error->message();
  const auto applied = p.api.applied();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].path,
            "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/gpu-node-1");
  EXPECT_EQ(applied[0].field_manager, "tessera-agent");
  EXPECT_EQ(applied[0].force, "true");
  EXPECT_EQ(applied[0].content_type, "application/apply-patch+yaml");
  EXPECT_EQ(applied[0].auth, "Bearer agent-token");
  EXPECT_EQ(applied[0].body, nrt("gpu-node-1", 8));
}

TEST(NrtPublisher, AppliesAgainOnAChangeOrAfterThePeriodAndNotOtherwise) {
  Publisher p;
  p.publisher->maybe_publish(nrt("n", 8));
  p.clock.advance(core::seconds(1));
  EXPECT_FALSE(p.publisher->maybe_publish(nrt("n", 8)).attempted) << "nothing new, not yet due";
  EXPECT_TRUE(p.publisher->maybe_publish(nrt("n", 6)).attempted) << "two GPUs allocated";
  p.clock.advance(core::seconds(30));
  EXPECT_TRUE(p.publisher->maybe_publish(nrt("n", 6)).attempted) << "the period came round";
  EXPECT_EQ(p.api.applied().size(), 3u);
  EXPECT_EQ(p.api.applied().back().body, nrt("n", 6));
}

TEST(NrtPublisher, ARefusalIsAnErrorWithTheReasonAndIsRetriedNextPeriod) {
  Publisher p;
  p.api.refuse(true);
  const auto o = p.publisher->maybe_publish(nrt("n", 8));
  ASSERT_TRUE(o.error);
  EXPECT_NE(o.error->message().find("HTTP 404: the server could not find the requested resource"),
            std::string::npos)
      << o.error->message();
  EXPECT_FALSE(p.publisher->maybe_publish(nrt("n", 8)).attempted) << "no retry before the period";
  p.api.refuse(false);
  p.clock.advance(core::seconds(30));
  const auto retried = p.publisher->maybe_publish(nrt("n", 8));
  EXPECT_TRUE(retried.attempted);
  EXPECT_FALSE(retried.error);
}

TEST(NrtPublisher, ANameThatIsNotAKubernetesNameIsNotSent) {
  Publisher p;
  const auto o = p.publisher->maybe_publish(nrt("../pods", 8));
  ASSERT_TRUE(o.error);
  EXPECT_NE(o.error->message().find("not a Kubernetes name"), std::string::npos);
  EXPECT_TRUE(p.api.applied().empty());
}

}  // namespace
}  // namespace tessera::k8s
