// The agent's push to the extender (PUT {URL}/tessera/v1/nodes/{node}/topology) against a fake
// extender: an httplib::Server on an ephemeral loopback port that records what it was sent.

#include "tessera/k8s/agent_push.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent_topologies.hpp"
#include "support/self_signed_cert.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/k8s/binder.hpp"
#include "tessera/k8s/extender_service.hpp"
#include "tessera/k8s/http_server.hpp"
#include "tessera/k8s/node_agent.hpp"

namespace tessera::k8s {
namespace {

using testing::small_server;

class FakeExtender {
 public:
  struct Received {
    std::string path;
    std::string node;  // from the path
    std::string content_type;
    nlohmann::json body;
  };

  explicit FakeExtender(std::string prefix = "") {
    server_.Put(prefix + R"(/tessera/v1/nodes/([^/]+)/topology)", [this](
                                                                      const httplib::Request& req,
                                                                      httplib::Response& res) {
      std::lock_guard lock(mu_);
      received_.push_back({req.path, req.matches[1].str(), req.get_header_value("Content-Type"),
                           nlohmann::json::parse(req.body, nullptr, false)});
      res.status = status_;
      res.set_content(status_ == 200 ? R"({"node": "ok"})" : R"({"error": "topology rejected"})",
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib's stop() does nothing before the accept loop runs: wait for it (5 s at most).
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~FakeExtender() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void answer(int status) {
    std::lock_guard lock(mu_);
    status_ = status;
  }
  std::vector<Received> received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  int status_ = 200;
  std::vector<Received> received_;
};

std::unique_ptr<TopologyPusher> pusher(const std::string& url) {
  PushOptions o;
  o.url = url;
  o.timeout = std::chrono::milliseconds(2000);
  auto p = TopologyPusher::create(o);
  EXPECT_TRUE(p) << p.error().message();
  return p ? std::move(*p) : nullptr;
}

TEST(AgentPush, PutsTheNodesTopologyInTheExtendersProtocol) {
  FakeExtender extender;
  auto p = pusher(extender.url());
  ASSERT_TRUE(p);
  const hw::HostTopology t = small_server("host-a");
  auto st = p->push("node-a", t);
  ASSERT_TRUE(st) << st.error().message();
  const auto got = extender.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/tessera/v1/nodes/node-a/topology");
  EXPECT_EQ(got[0].node, "node-a");
  EXPECT_EQ(got[0].content_type, "application/json");
  EXPECT_EQ(got[0].body.at("node"), "node-a");
  EXPECT_EQ(got[0].body.at("topology"), hw::to_json(t));
  // What the extender reads back is the same graph.
  auto back = hw::topology_from_json(got[0].body.at("topology"), "push");
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(hw::to_json(*back), hw::to_json(t));

  // The client is kept: a second push works the same.
  ASSERT_TRUE(p->push("node-a", t));
  EXPECT_EQ(extender.received().size(), 2u);
}

// Against the real extender with a write token: the pusher's token is accepted, no token is an
// error naming the status.
TEST(AgentPush, CarriesTheExtendersWriteToken) {
  ExtenderConfig config;
  config.write_token = "agent-token";
  ExtenderService service(config, std::make_shared<RecordOnlyBinder>());
  auto server = HttpServer::create(HttpServerOptions{});
  ASSERT_TRUE(server);
  service.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());

  auto without = pusher(url);
  ASSERT_TRUE(without);
  auto refused = without->push("node-a", small_server("host-a"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("401"), std::string::npos) << refused.error().message();
  EXPECT_EQ(service.node_count(), 0u);

  PushOptions o;
  o.url = url;
  o.token = "agent-token";
  auto with = TopologyPusher::create(o);
  ASSERT_TRUE(with) << with.error().message();
  auto st = (*with)->push("node-a", small_server("host-a"));
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(service.node_count(), 1u);
}

TEST(AgentPush, KeepsTheUrlsPathPrefix) {
  FakeExtender extender("/api");
  auto p = pusher(extender.url() + "/api/");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->target("n1"), extender.url() + "/api/tessera/v1/nodes/n1/topology");
  ASSERT_TRUE(p->push("n1", small_server("h")));
  ASSERT_EQ(extender.received().size(), 1u);
  EXPECT_EQ(extender.received()[0].path, "/api/tessera/v1/nodes/n1/topology");
}

TEST(AgentPush, ARejectionIsAnErrorWithTheStatusAndReason) {
  FakeExtender extender;
  extender.answer(503);
  auto p = pusher(extender.url());
  ASSERT_TRUE(p);
  auto st = p->push("node-a", small_server("h"));
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("HTTP 503"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("topology rejected"), std::string::npos);
  EXPECT_NE(st.error().message().find(p->target("node-a")), std::string::npos);
}

TEST(AgentPush, NoExtenderIsAnErrorNotACrash) {
  int port = 0;
  {
    FakeExtender gone;
    port = gone.port();
  }
  auto p = pusher("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(p);
  auto st = p->push("node-a", small_server("h"));
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("127.0.0.1"), std::string::npos) << st.error().message();
}

TEST(AgentPush, RejectsUrlsThatAreNotHttp) {
  for (const char* url : {"", "127.0.0.1:8888", "ftp://x/", "http://", "http://x y"}) {
    PushOptions o;
    o.url = url;
    EXPECT_FALSE(TopologyPusher::create(o)) << url;
  }
}

// The agent's loop with the real pusher: the extender is down at first, the push fails and is
// retried a period later, when it is up.
TEST(AgentPush, LoopRetriesUntilTheExtenderAnswers) {
  FakeExtender extender;
  extender.answer(500);
  core::ManualClock clock;
  AgentOptions o;
  o.node_name = "node-a";
  o.refresh_period = 10 * core::kNanosPerSecond;
  auto agent = NodeAgent::create(
      o, [] { return core::Result<hw::HostTopology>(small_server("host-a")); }, clock);
  ASSERT_TRUE(agent);
  auto p = pusher(extender.url());
  ASSERT_TRUE(p);
  AgentLoop loop(
      **agent,
      [&p](const std::string& node, const hw::HostTopology& t) { return p->push(node, t); }, clock);
  EXPECT_TRUE(loop.tick().push_error);
  extender.answer(200);
  EXPECT_FALSE(loop.tick().pushed);
  clock.advance(o.refresh_period);
  auto retried = loop.tick();
  EXPECT_TRUE(retried.pushed);
  EXPECT_FALSE(retried.push_error);
  EXPECT_EQ(extender.received().size(), 2u);
}

// The real extender service in-process: what the agent pushes is the node the extender schedules
// on, and a changed topology replaces it.
TEST(AgentPush, TheRealExtenderTakesThePushedTopology) {
  ExtenderService extender(ExtenderConfig{}, std::make_shared<RecordOnlyBinder>());
  auto server = HttpServer::create({});
  ASSERT_TRUE(server) << server.error().message();
  extender.register_routes(**server);
  ASSERT_TRUE((*server)->start());

  core::ManualClock clock;
  hw::HostTopology machine = small_server("host-a");
  AgentOptions o;
  o.node_name = "gpu-node-1";
  auto agent = NodeAgent::create(
      o, [&machine] { return core::Result<hw::HostTopology>(machine); }, clock);
  ASSERT_TRUE(agent);
  auto p = pusher("http://127.0.0.1:" + std::to_string((*server)->port()));
  ASSERT_TRUE(p);
  AgentLoop loop(
      **agent,
      [&p](const std::string& node, const hw::HostTopology& t) { return p->push(node, t); }, clock);

  auto first = loop.tick();
  ASSERT_TRUE(first.pushed);
  ASSERT_FALSE(first.push_error) << first.push_error->message();
  cluster::ClusterState state = extender.snapshot();
  ASSERT_EQ(state.nodes().size(), 1u);
  EXPECT_EQ(state.node(0).name(), "gpu-node-1");
  EXPECT_EQ(hw::to_json(state.node(0).topology()), hw::to_json(machine));

  machine = small_server("host-a", 3);  // two more GPUs show up
  clock.advance(o.refresh_period);
  auto second = loop.tick();
  ASSERT_TRUE(second.refresh && second.refresh->changed);
  ASSERT_TRUE(second.pushed);
  ASSERT_FALSE(second.push_error) << second.push_error->message();
  state = extender.snapshot();
  ASSERT_EQ(state.nodes().size(), 1u);
  EXPECT_EQ(state.node(0).topology().gpus().size(), 6u);
  p.reset();  // closes the keep-alive connection, which the server's stop() would wait out
  (*server)->stop();
}

// HTTPS: the push verifies the extender's certificate against --push-ca; without it (system CAs)
// a self-signed extender is refused with a reason naming the flag.
TEST(AgentPush, HttpsVerifiesTheExtenderAgainstTheGivenCa) {
  const auto tls = test::make_self_signed_cert("agent");
  if (!tls) GTEST_SKIP() << test::kNoOpenssl;
  const std::string& cert = tls->cert;
  const std::string& key = tls->key;

  ExtenderService extender(ExtenderConfig{}, std::make_shared<RecordOnlyBinder>());
  HttpServerOptions o;
  o.cert_file = cert;
  o.key_file = key;
  auto server = HttpServer::create(o);
  ASSERT_TRUE(server) << server.error().message();
  extender.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  const std::string url = "https://127.0.0.1:" + std::to_string((*server)->port());
  {
    PushOptions trusted;
    trusted.url = url;
    trusted.ca_file = cert;
    auto p = TopologyPusher::create(trusted);
    ASSERT_TRUE(p);
    auto st = (*p)->push("tls-node", small_server("h"));
    EXPECT_TRUE(st) << st.error().message();
    EXPECT_EQ(extender.node_count(), 1u);
  }
  {
    auto p = pusher(url);
    ASSERT_TRUE(p);
    auto st = p->push("other-node", small_server("h"));
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message().find("--push-ca"), std::string::npos) << st.error().message();
    EXPECT_EQ(extender.node_count(), 1u);
  }
  (*server)->stop();
  std::filesystem::remove_all(tls->dir);
}

// An extender that requires client certificates (--client-ca) takes the push of an agent with
// one its CA signed (--push-cert, --push-key) and refuses one without.
TEST(AgentPush, PresentsTheClientCertificateAnExtenderRequires) {
  const auto tls = test::make_self_signed_cert("agent_mtls");
  const auto clients = test::make_client_certs("agent_mtls");
  if (!tls || !clients) GTEST_SKIP() << test::kNoOpenssl;
  ExtenderService extender(ExtenderConfig{}, std::make_shared<RecordOnlyBinder>());
  HttpServerOptions o;
  o.cert_file = tls->cert;
  o.key_file = tls->key;
  o.client_ca_file = clients->ca;
  auto server = HttpServer::create(o);
  ASSERT_TRUE(server) << server.error().message();
  extender.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  PushOptions options;
  options.url = "https://127.0.0.1:" + std::to_string((*server)->port());
  options.ca_file = tls->cert;
  {
    auto p = TopologyPusher::create(options);
    ASSERT_TRUE(p);
    auto st = (*p)->push("anonymous", small_server("h"));
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message().find("HTTP 403"), std::string::npos) << st.error().message();
  }
  options.cert_file = clients->cert;
  options.key_file = clients->key;
  auto p = TopologyPusher::create(options);
  ASSERT_TRUE(p) << p.error().message();
  auto st = (*p)->push("mtls-node", small_server("h"));
  EXPECT_TRUE(st) << st.error().message();
  EXPECT_EQ(extender.node_count(), 1u);
  (*server)->stop();
  std::filesystem::remove_all(tls->dir);
  std::filesystem::remove_all(clients->dir);
}

TEST(AgentPush, AClientCertificateNeedsItsKeyAndHttps) {
  PushOptions half;
  half.url = "https://127.0.0.1:1";
  half.cert_file = "/nonexistent/cert.pem";
  auto no_key = TopologyPusher::create(half);
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().message().find("needs both its certificate and key"), std::string::npos);
  half.key_file = "/nonexistent/key.pem";
  auto unreadable = TopologyPusher::create(half);
  ASSERT_FALSE(unreadable);
  EXPECT_NE(unreadable.error().message().find("cannot load the client certificate"),
            std::string::npos)
      << unreadable.error().message();
  half.url = "http://127.0.0.1:1";
  EXPECT_FALSE(TopologyPusher::create(half));
}

}  // namespace
}  // namespace tessera::k8s
