// The plugin and a real tesserad together: claims allocated on one GPU become grants, and the
// processes that register under the claims' tenants (as the interposer does, on the daemon's
// socket) run with the limits the claims asked for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../daemon/served_daemon.hpp"
#include "../k8s/fake_api_server.hpp"
#include "claim_fixtures.hpp"
#include "scratch_dir.hpp"
#include "tessera/dra/api_claim_source.hpp"
#include "tessera/dra/daemon_grants.hpp"
#include "tessera/dra/dra_driver.hpp"

namespace tessera::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kChatUid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f";
constexpr const char* kTrainUid = "0b7e4d21-95aa-4f3c-8d11-7e6f5a4b3c2d";
constexpr const char* kGreedyUid = "9d8c7b6a-1111-4222-8333-444455556666";

// The claims as the API server holds them: a latency-critical half of GPU 0 with 40 GiB, a
// best-effort half with 36 GiB, and one more asking 60% of the same GPU.
json claims_by_path(const std::string& path) {
  const std::string base = "/apis/resource.k8s.io/v1/namespaces/";
  if (path == base + "serving/resourceclaims/vllm-7d9f8-gpu-x2k4p") {
    return test::allocated_claim(kChatUid, "gpu-0", "50", "40Gi");
  }
  json claim;
  if (path == base + "training/resourceclaims/resnet-train-gpu-q8m2z") {
    claim = test::allocated_claim(kTrainUid, "gpu-0", "50", "36Gi");
  } else if (path == base + "training/resourceclaims/greedy-gpu-a1b2c") {
    claim = test::allocated_claim(kGreedyUid, "gpu-0", "60", "8Gi");
  } else {
    return json();
  }
  claim["metadata"]["namespace"] = "training";
  auto& config = claim["status"]["allocation"]["devices"]["config"];
  config.erase(1);  // the class's config only: best-effort
  return claim;
}

class DraWithDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::scratch_dir("dra-daemon");
    fs::create_directories(root_ / "cdi");
    std::ofstream(root_ / "token") << "t\n";
    auto client = tessera::k8s::ApiServerClient::create(
        {.url = api_.url(), .token_file = (root_ / "token").string(), .ca_file = ""});
    ASSERT_TRUE(client) << client.error().message();
    claims_ = std::make_unique<ApiClaimSource>(std::move(*client));
    grants_ = std::make_unique<DaemonGrants>(daemon_.path());
    DriverOptions o;
    o.node_name = "node-a";
    o.cdi_dir = (root_ / "cdi").string();
    o.checkpoint_path = (root_ / "checkpoint.json").string();
    o.daemon_socket = daemon_.path();
    auto driver = DraDriver::open(o, *claims_, *grants_);
    ASSERT_TRUE(driver) << driver.error().message();
    driver_ = std::move(*driver);
  }
  void TearDown() override { fs::remove_all(root_); }

  // The environment the claim's CDI spec gives its containers, as NAME -> VALUE.
  std::map<std::string, std::string> container_env(const std::string& uid) {
    std::ifstream in(root_ / "cdi" / ("gpu.tessera.io-claim_" + uid + ".json"));
    const json spec = json::parse(in);
    std::map<std::string, std::string> env;
    for (const auto& edits : {spec["containerEdits"], spec["devices"][0]["containerEdits"]}) {
      for (const auto& e : edits["env"]) {
        const std::string s = e.get<std::string>();
        env[s.substr(0, s.find('='))] = s.substr(s.find('=') + 1);
      }
    }
    return env;
  }
  // What the interposer sends at a process's start, from its environment (the daemon's device
  // index included, which the grant overrides anyway).
  static json registration(const std::map<std::string, std::string>& env) {
    return {{"op", "register"},
            {"tenant", env.at("TESSERA_TENANT")},
            {"class", "best-effort"},
            {"device", std::stoi(env.at("TESSERA_DEVICE"))}};
  }

  test::ServedDaemon daemon_{[](daemon::ServerOptions& o) {
    o.grants_path = (test::scratch_dir("dra-daemon-grants") / "grants.json").string();
  }};
  test::FakeApiServer api_{[](const httplib::Request& req, httplib::Response& res) {
    const json claim = claims_by_path(req.path);
    if (claim.is_null()) {
      test::status_answer(res, 404, "not found");
      return;
    }
    res.status = 200;
    res.set_content(claim.dump(), "application/json");
  }};
  fs::path root_;
  std::unique_ptr<ApiClaimSource> claims_;
  std::unique_ptr<DaemonGrants> grants_;
  std::unique_ptr<DraDriver> driver_;
};

TEST_F(DraWithDaemonTest, TwoClaimsOnOneGpuBecomeTwoTenantsWithTheirLimits) {
  const ClaimRef chat{.ns = "serving", .name = "vllm-7d9f8-gpu-x2k4p", .uid = kChatUid};
  const ClaimRef train{.ns = "training", .name = "resnet-train-gpu-q8m2z", .uid = kTrainUid};
  ASSERT_TRUE(driver_->prepare(chat));
  ASSERT_TRUE(driver_->prepare(train));

  json listed = daemon_.list();
  ASSERT_EQ(listed["grants"].size(), 2u);

  // Each container's process registers as the interposer would, from the spec's environment,
  // asking for nothing in particular: the grants decide.
  test::Connection chat_process(daemon_.path());
  chat_process.send(registration(container_env(kChatUid)).dump() + "\n");
  const json chat_reply = json::parse(chat_process.reply());
  EXPECT_EQ(chat_reply["ok"], true) << chat_reply.dump();
  EXPECT_EQ(chat_reply["claim"], kChatUid);
  EXPECT_EQ(chat_reply["class"], "latency-critical");
  EXPECT_EQ(chat_reply["priority"], 10);
  test::Connection train_process(daemon_.path());
  train_process.send(registration(container_env(kTrainUid)).dump() + "\n");
  const json train_reply = json::parse(train_process.reply());
  EXPECT_EQ(train_reply["claim"], kTrainUid);
  EXPECT_EQ(train_reply["class"], "best-effort");

  listed = daemon_.list();
  ASSERT_EQ(listed["tenants"].size(), 2u) << listed.dump();
  std::map<std::string, json> by_claim;
  for (const auto& t : listed["tenants"]) by_claim[t["claim"].get<std::string>()] = t;
  EXPECT_EQ(by_claim[kChatUid]["tenant"], "vllm-7d9f8-gpu-x2k4p-6f1c9a2e");
  EXPECT_EQ(by_claim[kChatUid]["memory_limit_assigned"], 40ull << 30) << by_claim[kChatUid].dump();
  EXPECT_EQ(by_claim[kChatUid]["tpot_slo_ms"], 50);
  EXPECT_EQ(by_claim[kChatUid]["sm_share"], 0.5);
  EXPECT_EQ(by_claim[kTrainUid]["tenant"], "resnet-train-gpu-q8m2z-0b7e4d21");
  EXPECT_EQ(by_claim[kTrainUid]["memory_limit_assigned"], 36ull << 30);
  EXPECT_EQ(by_claim[kTrainUid]["device"], 0);
}

TEST_F(DraWithDaemonTest, AShareTheGpuNoLongerHasIsRefusedWithNothingLeftBehind) {
  ASSERT_TRUE(driver_->prepare({.ns = "serving", .name = "vllm-7d9f8-gpu-x2k4p", .uid = kChatUid}));
  const ClaimRef greedy{.ns = "training", .name = "greedy-gpu-a1b2c", .uid = kGreedyUid};
  auto refused = driver_->prepare(greedy);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("0.5 of its SMs free"), std::string::npos)
      << refused.error().message();
  EXPECT_FALSE(
      fs::exists(root_ / "cdi" / (std::string("gpu.tessera.io-claim_") + kGreedyUid + ".json")));
  EXPECT_EQ(driver_->prepared(), 1u);
  EXPECT_EQ(daemon_.list()["grants"].size(), 1u);

  // Once the first claim is gone, the GPU has room and the kubelet's retry succeeds.
  ASSERT_TRUE(
      driver_->unprepare({.ns = "serving", .name = "vllm-7d9f8-gpu-x2k4p", .uid = kChatUid}));
  ASSERT_TRUE(driver_->prepare(greedy));
  const json grants = daemon_.list()["grants"];
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0]["claim"], kGreedyUid);
  EXPECT_EQ(grants[0]["sm_share"], 0.6);
}

}  // namespace
}  // namespace tessera::dra
