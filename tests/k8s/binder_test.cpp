// ApiServerBinder against a fake API server: the v1.Binding's path, body and bearer token, the
// API server's refusal passed on with its reason, and an unreachable server.

#include "tessera/k8s/binder.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// Binds, except the pod named "refused", which the API server says is already bound.
void answer_bindings(const httplib::Request& req, httplib::Response& res) {
  if (req.path.find("/pods/refused/") != std::string::npos) {
    test::status_answer(res, 409, "pod refused is already assigned to node \"n0\"");
  }
}

std::string token_file(const std::string& token) {
  const auto path =
      std::filesystem::temp_directory_path() / ("tessera_token_" + std::to_string(::getpid()));
  std::ofstream(path) << token << "\n";
  return path.string();
}

TEST(ApiServerBinder, PostsTheBindingWithTheBearerToken) {
  test::FakeApiServer api(answer_bindings);
  ApiServerConfig c;
  c.url = "http://127.0.0.1:" + std::to_string(api.port()) + "/";
  c.token_file = token_file("s3cr3t");
  auto binder = ApiServerBinder::create(c);
  ASSERT_TRUE(binder) << binder.error().message();
  BindingTarget t{"inference", "llm-0", "uid-123", "gpu-node-4", ""};
  auto st = (*binder)->bind(t);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(api.last().path, "/api/v1/namespaces/inference/pods/llm-0/binding");
  EXPECT_EQ(api.last().method, "POST");
  EXPECT_EQ(api.last().auth, "Bearer s3cr3t");
  const json want{{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", "llm-0"}, {"namespace", "inference"}, {"uid", "uid-123"}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "gpu-node-4"}}}};
  EXPECT_EQ(api.last().body, want);

  // The token is read at every bind (the kubelet rotates projected tokens).
  std::ofstream(c.token_file) << "rotated\n";
  ASSERT_TRUE((*binder)->bind(t));
  EXPECT_EQ(api.last().auth, "Bearer rotated");
  std::filesystem::remove(c.token_file);
}

// A pod that holds resources gets its placement recorded on it before the Binding, so that a
// bound pod always carries it; a pod the API server does not have is not bound.
TEST(ApiServerBinder, RecordsThePlacementOnThePodFirst) {
  test::FakeApiServer api([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "PATCH") res.status = 200;
    if (req.path.find("/pods/gone") != std::string::npos) {
      test::status_answer(res, 404, "pods \"gone\" not found");
    }
  });
  ApiServerConfig c;
  c.url = api.url();
  c.token_file = token_file("t");
  auto binder = ApiServerBinder::create(c);
  ASSERT_TRUE(binder);
  const std::string placement =
      R"({"gpus":[0,1],"core_groups":[0],"memory":[],"affinity":"same-numa"})";
  ASSERT_TRUE((*binder)->bind(BindingTarget{"ml", "train-0", "u1", "n1", placement}));
  const auto requests = api.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].path, "/api/v1/namespaces/ml/pods/train-0");
  EXPECT_EQ(requests[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(requests[0].body,
            (json{{"metadata", {{"annotations", {{"tessera.io/placement", placement}}}}}}));
  EXPECT_EQ(requests[1].path, "/api/v1/namespaces/ml/pods/train-0/binding");

  auto st = (*binder)->bind(BindingTarget{"ml", "gone", "u2", "n1", placement});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("recording its placement"), std::string::npos);
  EXPECT_NE(st.error().message().find("not found"), std::string::npos);
  EXPECT_EQ(api.requests().size(), 3u) << "no Binding after the refused patch";
  std::filesystem::remove(c.token_file);
}

TEST(ApiServerBinder, PassesOnTheApiServersReason) {
  test::FakeApiServer api(answer_bindings);
  ApiServerConfig c;
  c.url = "http://127.0.0.1:" + std::to_string(api.port());
  c.token_file = token_file("t");
  auto binder = ApiServerBinder::create(c);
  ASSERT_TRUE(binder);
  auto st = (*binder)->bind(BindingTarget{"ns", "refused", "u", "n1", ""});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("HTTP 409"), std::string::npos);
  EXPECT_NE(st.error().message().find("already assigned"), std::string::npos);
  // A name that is not a Kubernetes name never reaches the server.
  EXPECT_FALSE((*binder)->bind(BindingTarget{"ns", "../../nodes/x", "u", "n1", ""}));
  std::filesystem::remove(c.token_file);
}

TEST(ApiServerBinder, UnreachableAndMisconfigured) {
  ApiServerConfig c;
  c.url = "http://127.0.0.1:1";
  c.token_file = token_file("t");
  c.timeout = std::chrono::milliseconds(500);
  auto binder = ApiServerBinder::create(c);
  ASSERT_TRUE(binder);
  auto st = (*binder)->bind(BindingTarget{"ns", "p", "u", "n1", ""});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("unreachable"), std::string::npos);

  ApiServerConfig no_scheme = c;
  no_scheme.url = "10.0.0.1:443";
  EXPECT_FALSE(ApiServerBinder::create(no_scheme));
  ApiServerConfig no_token = c;
  no_token.token_file = "/nonexistent/token";
  auto e = ApiServerBinder::create(no_token);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("/nonexistent/token"), std::string::npos);
  // The token is read whole at every bind: a file that never ends is cut at 1 MiB.
  ApiServerConfig endless_token = c;
  endless_token.token_file = "/dev/zero";
  auto endless = ApiServerBinder::create(endless_token);
  ASSERT_FALSE(endless);
  EXPECT_NE(endless.error().message().find("'/dev/zero' is larger than 1 MiB"), std::string::npos)
      << endless.error().message();
  std::filesystem::remove(c.token_file);
}

TEST(RecordOnlyBinder, RecordsEveryBinding) {
  RecordOnlyBinder b;
  ASSERT_TRUE(b.bind(BindingTarget{"ns", "p", "u", "n1", ""}));
  ASSERT_EQ(b.bindings().size(), 1u);
  EXPECT_EQ(b.bindings()[0].node, "n1");
}

}  // namespace
}  // namespace tessera::k8s
