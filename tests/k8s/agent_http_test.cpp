// The agent's HTTP routes on a real HttpServer (loopback, ephemeral port), called with
// cpp-httplib's client.

#include "tessera/k8s/agent_http.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <string>
#include <vector>

#include "agent_topologies.hpp"
#include "tessera/core/clock.hpp"

namespace tessera::k8s {
namespace {

using testing::small_server;

class AgentHttpTest : public ::testing::Test {
 protected:
  core::ManualClock clock;
  std::unique_ptr<NodeAgent> agent;
  std::unique_ptr<HttpServer> server;
  std::atomic<int> changes{0};

  void SetUp() override {
    AgentOptions o;
    o.node_name = "node-a";
    auto a = NodeAgent::create(
        o, [] { return core::Result<hw::HostTopology>(small_server("host-a")); }, clock);
    ASSERT_TRUE(a) << a.error().message();
    agent = std::move(*a);
    auto s = HttpServer::create({});
    ASSERT_TRUE(s) << s.error().message();
    server = std::move(*s);
    add_agent_routes(*server, *agent, [this] { ++changes; });
    auto st = server->start();
    ASSERT_TRUE(st) << st.error().message();
  }

  httplib::Client client() {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(5, 0);
    return c;
  }
};

nlohmann::json body_of(const httplib::Result& r) {
  EXPECT_TRUE(r);
  return r ? nlohmann::json::parse(r->body) : nlohmann::json();
}

TEST_F(AgentHttpTest, ServesHealthTopologyAndNrt) {
  auto c = client();
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(body_of(health).at("status"), "ok");
  EXPECT_EQ(body_of(health).at("node"), "node-a");

  auto topology = c.Get("/topology");
  ASSERT_TRUE(topology);
  EXPECT_EQ(topology->status, 200);
  EXPECT_EQ(body_of(topology), agent->topology_json());

  auto nrt = c.Get("/noderesourcetopology");
  ASSERT_TRUE(nrt);
  EXPECT_EQ(nrt->status, 200);
  EXPECT_EQ(nrt->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(body_of(nrt), *agent->node_resource_topology());
}

TEST_F(AgentHttpTest, ServesNrtAsYamlWhenAsked) {
  auto c = client();
  std::vector<httplib::Result> answers;
  answers.push_back(c.Get("/noderesourcetopology", {{"Accept", "application/yaml"}}));
  answers.push_back(c.Get("/noderesourcetopology.yaml"));
  answers.push_back(c.Get("/noderesourcetopology?format=yaml"));
  for (const auto& r : answers) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/yaml");
    const YAML::Node y = YAML::Load(r->body);
    EXPECT_EQ(y["kind"].as<std::string>(), "NodeResourceTopology");
    EXPECT_EQ(y["metadata"]["name"].as<std::string>(), "node-a");
    EXPECT_EQ(y["zones"].size(), 2u);
  }
}

TEST_F(AgentHttpTest, FormatJsonInTheQueryWinsOverTheAcceptHeader) {
  auto c = client();
  auto r = c.Get("/noderesourcetopology?format=json", {{"Accept", "application/yaml"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  auto bad = c.Get("/noderesourcetopology?format=xml");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(body_of(bad).at("error").get<std::string>().find("format 'xml'"), std::string::npos);
}

TEST_F(AgentHttpTest, PostAllocationsUpdatesTheStateAndKeepsServingAfterBadOnes) {
  auto c = client();
  auto garbage = c.Post("/allocations", "{not json", "application/json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
  EXPECT_NE(body_of(garbage).at("error").get<std::string>().find("not JSON"), std::string::npos);

  auto wrong =
      c.Post("/allocations", R"({"pods": [{"name": "a", "gpus": ["x"]}]})", "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 400);
  EXPECT_NE(body_of(wrong).at("error").get<std::string>().find("pods[0].gpus[0]"),
            std::string::npos);

  auto misfit =
      c.Post("/allocations", R"({"pods": [{"name": "a", "gpus": [9]}]})", "application/json");
  ASSERT_TRUE(misfit);
  EXPECT_EQ(misfit->status, 409);
  EXPECT_EQ(changes, 0);

  auto good = c.Post("/allocations",
                     R"({"pods": [{"name": "default/llm", "gpus": [0, 1], "core_groups": [0]}]})",
                     "application/json");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_EQ(body_of(good).at("generation"), 2);
  EXPECT_EQ(body_of(good).at("changed"), true);
  EXPECT_EQ(changes, 1);

  auto listed = c.Get("/allocations");
  ASSERT_TRUE(listed);
  const auto j = body_of(listed);
  EXPECT_EQ(j.at("generation"), 2);
  ASSERT_EQ(j.at("pods").size(), 1u);
  EXPECT_EQ(j.at("pods")[0].at("name"), "default/llm");

  auto nrt = body_of(c.Get("/noderesourcetopology"));
  EXPECT_EQ(nrt.at("zones")[0].at("resources")[2].at("available"), "0");

  auto same = c.Post("/allocations", listed->body, "application/json");
  ASSERT_TRUE(same);
  EXPECT_EQ(body_of(same).at("changed"), false);
  EXPECT_EQ(changes, 1);
}

TEST_F(AgentHttpTest, ADeeplyNestedBodyIsRefusedNotAStackOverflow) {
  constexpr int kDepth = 200'000;
  const std::string body = R"({"pods": [{"name": "a", "gpus": )" + std::string(kDepth, '[') +
                           std::string(kDepth, ']') + "}]}";
  auto c = client();
  auto r = c.Post("/allocations", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(body_of(r).at("error").get<std::string>().find("got an array"), std::string::npos);
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(AgentHttpTest, UnknownRoutesGetAJsonReason) {
  auto c = client();
  auto r = c.Get("/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(body_of(r).contains("error"));
}

}  // namespace
}  // namespace tessera::k8s
