// Leader election over a Lease against a fake API server that keeps one Lease with
// resourceVersion semantics (create: 409 if it exists; update: 409 unless the version read is
// the current one): two replicas, one leads; the standby takes over only after the leader stops
// renewing for the lease's duration on the standby's own clock; a leader that cannot renew
// within its deadline stops leading; a replica that stops gives the Lease up. A standby extender
// answers the verbs 503 and is not ready.

#include "tessera/k8s/lease_elector.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "fake_api_server.hpp"
#include "support/cluster_builders.hpp"
#include "tessera/k8s/extender_service.hpp"
#include "tessera/k8s/http_server.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

constexpr std::string_view kCollection = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";

// The API server's side of one Lease.
class LeaseStore {
 public:
  void answer(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu_);
    res.body.clear();
    if (failing) {
      test::status_answer(res, 500, "etcd is not ready");
      return;
    }
    const bool item = req.path == std::string(kCollection) + "/lease";
    if (req.method == "GET" && item) {
      if (lease_.is_null()) {
        test::status_answer(res, 404, "leases \"lease\" not found");
        return;
      }
      res.status = 200;
      res.set_content(lease_.dump(), "application/json");
    } else if (req.method == "POST" && req.path == kCollection) {
      if (!lease_.is_null()) {
        test::status_answer(res, 409, "leases \"lease\" already exists");
        return;
      }
      lease_ = json::parse(req.body);
      lease_["metadata"]["resourceVersion"] = std::to_string(++version_);
      res.status = 201;
      res.set_content(lease_.dump(), "application/json");
    } else if (req.method == "PUT" && item) {
      json put = json::parse(req.body);
      if (conflict_next || lease_.is_null() ||
          put["metadata"].value("resourceVersion", "") !=
              lease_["metadata"]["resourceVersion"].get<std::string>()) {
        conflict_next = false;
        test::status_answer(res, 409, "the object has been modified");
        return;
      }
      lease_ = put;
      lease_["metadata"]["resourceVersion"] = std::to_string(++version_);
      res.status = 200;
      res.set_content(lease_.dump(), "application/json");
    } else {
      test::status_answer(res, 404, "no such route in the fake");
    }
  }
  json spec() {
    std::lock_guard lock(mu_);
    return lease_.is_null() ? json() : lease_["spec"];
  }

  std::atomic<bool> failing{false};
  std::atomic<bool> conflict_next{false};

 private:
  std::mutex mu_;
  json lease_;
  int version_ = 0;
};

ApiServerClient client_for(const test::FakeApiServer& api) {
  const auto token = std::filesystem::temp_directory_path() /
                     ("tessera_lease_token_" + std::to_string(::getpid()));
  std::ofstream(token) << "t\n";
  ApiServerConfig c;
  c.url = api.url();
  c.token_file = token.string();
  return *ApiServerClient::create(c);
}

LeaseOptions options(const std::string& identity) {
  LeaseOptions o;
  o.lease_namespace = "ns";
  o.name = "lease";
  o.identity = identity;
  return o;
}

constexpr core::Nanos kSecond = 1'000'000'000;

TEST(LeaseElector, OneLeadsAndTheOtherTakesOverOnlyAfterItStopsRenewing) {
  LeaseStore store;
  test::FakeApiServer api([&](const auto& req, auto& res) { store.answer(req, res); });
  core::ManualClock clock_a;
  core::ManualClock clock_b;
  int a_changes = 0;
  LeaseElector a(client_for(api), options("a"), clock_a, [&](bool) { ++a_changes; });
  LeaseElector b(client_for(api), options("b"), clock_b, {});

  ASSERT_EQ(a.try_acquire_or_renew().value_or(false), true);
  EXPECT_EQ(store.spec()["holderIdentity"], "a");
  EXPECT_EQ(store.spec()["leaseDurationSeconds"], 15);
  EXPECT_EQ(b.try_acquire_or_renew().value_or(true), false);
  EXPECT_EQ(b.holder(), "a");

  // a renews every 2 s: b, which sees the record change, never finds it expired.
  for (int i = 0; i < 10; ++i) {
    clock_a.advance(2 * kSecond);
    clock_b.advance(2 * kSecond);
    ASSERT_TRUE(a.try_acquire_or_renew().value_or(false));
    ASSERT_FALSE(b.try_acquire_or_renew().value_or(true));
  }
  // a stops renewing: 14 s later the lease is still a's; past 15 s, b takes it.
  clock_b.advance(14 * kSecond);
  EXPECT_FALSE(b.try_acquire_or_renew().value_or(true));
  clock_b.advance(2 * kSecond);
  EXPECT_TRUE(b.try_acquire_or_renew().value_or(false));
  EXPECT_EQ(store.spec()["holderIdentity"], "b");
  EXPECT_EQ(store.spec()["leaseTransitions"], 1);
  // a comes back: it sees b's lease and stops leading.
  EXPECT_FALSE(a.try_acquire_or_renew().value_or(true));
  EXPECT_FALSE(a.leading());
  EXPECT_EQ(a_changes, 2) << "lead, then not";
}

TEST(LeaseElector, AConflictingWriteLosesAndAnUnrenewableLeaderStops) {
  LeaseStore store;
  test::FakeApiServer api([&](const auto& req, auto& res) { store.answer(req, res); });
  core::ManualClock clock;
  LeaseElector a(client_for(api), options("a"), clock, {});
  ASSERT_TRUE(a.try_acquire_or_renew().value_or(false));
  // Another replica wrote the Lease between a's read and its write.
  store.conflict_next = true;
  clock.advance(2 * kSecond);
  EXPECT_FALSE(a.try_acquire_or_renew().value_or(true));
  EXPECT_FALSE(a.leading());
  ASSERT_TRUE(a.try_acquire_or_renew().value_or(false));

  // The API server fails: a leads on until its renew deadline (10 s) has passed.
  store.failing = true;
  clock.advance(5 * kSecond);
  EXPECT_FALSE(a.try_acquire_or_renew());
  EXPECT_TRUE(a.leading());
  clock.advance(6 * kSecond);
  auto failed = a.try_acquire_or_renew();
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("HTTP 500"), std::string::npos);
  EXPECT_FALSE(a.leading());
}

// A Lease whose fields have the wrong types is an error that says so, not a crash.
TEST(LeaseElector, AMalformedLeaseIsAnError) {
  test::FakeApiServer api([](const httplib::Request& req, httplib::Response& res) {
    res.body.clear();
    res.status = 200;
    res.set_content(json{{"kind", "Lease"},
                         {"metadata", {{"resourceVersion", "1"}}},
                         {"spec", {{"holderIdentity", 42}}}}
                        .dump(),
                    "application/json");
    (void)req;
  });
  core::ManualClock clock;
  LeaseElector a(client_for(api), options("a"), clock, {});
  auto r = a.try_acquire_or_renew();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("cannot read"), std::string::npos) << r.error().message();
}

TEST(LeaseElector, AReplicaThatStopsGivesTheLeaseUp) {
  LeaseStore store;
  test::FakeApiServer api([&](const auto& req, auto& res) { store.answer(req, res); });
  core::ManualClock clock;
  LeaseElector a(client_for(api), options("a"), clock, {});
  std::atomic<bool> stop{false};
  std::thread t([&] { a.run([&] { return stop.load(); }); });
  for (int i = 0; i < 500 && !a.leading(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(a.leading());
  stop = true;
  t.join();
  EXPECT_FALSE(a.leading());
  EXPECT_EQ(store.spec()["holderIdentity"], "");
  // Released: another replica takes it at its first try, without waiting for expiry.
  core::ManualClock clock_b;
  LeaseElector b(client_for(api), options("b"), clock_b, {});
  EXPECT_TRUE(b.try_acquire_or_renew().value_or(false));
}

TEST(ExtenderStandby, AStandbyAnswersTheVerbs503AndIsNotReady) {
  ExtenderService service({}, nullptr);
  test::ServerSpec spec;
  ASSERT_TRUE(service.put_topology("n1", test::server(spec)));
  auto server = HttpServer::create(HttpServerOptions{});
  ASSERT_TRUE(server);
  service.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  httplib::Client c("127.0.0.1", (*server)->port());
  EXPECT_EQ(c.Get("/readyz")->status, 200);
  service.set_leading(false);
  EXPECT_EQ(c.Get("/readyz")->status, 503);
  EXPECT_EQ(c.Get("/healthz")->status, 200) << "alive all the same";
  auto filter = c.Post("/filter", "{}", "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 503);
  EXPECT_NE(filter->body.find("standby"), std::string::npos);
  service.set_leading(true);
  EXPECT_EQ(c.Post("/filter", "{}", "application/json")->status, 400) << "served again";
  (*server)->stop();
}

}  // namespace
}  // namespace tessera::k8s
