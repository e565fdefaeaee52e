// NrtPublisher against a fake API server: the server-side apply's path, query, content type,
// token and body; when it applies again (a changed object, the period) and when not; the API
// server's refusal passed on with its reason.

#include "tessera/k8s/nrt_publisher.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "tessera/core/clock.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

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

// Applies, or refuses as an API server without the CRD does while `refuse` is set.
struct Publisher {
  std::atomic<bool> refuse{false};
  test::FakeApiServer api{[this](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    if (refuse) test::status_answer(res, 404, "the server could not find the requested resource");
  }};
  std::filesystem::path token =
      std::filesystem::temp_directory_path() / ("tessera_nrt_token_" + std::to_string(::getpid()));
  core::ManualClock clock;
  std::unique_ptr<NrtPublisher> publisher;
  Publisher() {
    std::ofstream(token) << "agent-token\n";
    ApiServerConfig c;
    c.url = api.url();
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
  const auto applied = p.api.requests();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].method, "PATCH");
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
  EXPECT_EQ(p.api.requests().size(), 3u);
  EXPECT_EQ(p.api.requests().back().body, nrt("n", 6));
}

TEST(NrtPublisher, ARefusalIsAnErrorWithTheReasonAndIsRetriedNextPeriod) {
  Publisher p;
  p.refuse = true;
  const auto o = p.publisher->maybe_publish(nrt("n", 8));
  ASSERT_TRUE(o.error);
  EXPECT_NE(o.error->message().find("HTTP 404: the server could not find the requested resource"),
            std::string::npos)
      << o.error->message();
  EXPECT_FALSE(p.publisher->maybe_publish(nrt("n", 8)).attempted) << "no retry before the period";
  p.refuse = false;
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
  EXPECT_TRUE(p.api.requests().empty());
}

}  // namespace
}  // namespace tessera::k8s
