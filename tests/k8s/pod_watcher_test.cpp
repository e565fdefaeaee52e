// The extender's state kept from the API server: a bind records the placement on the pod; a
// restarted extender takes bound pods back from their annotations (before or after their node's
// topology arrives); pods that finish or are deleted leave the state, and victims of a
// preemption stay until then. PodWatcher against a fake API server speaking the wire format:
// paged lists, watch streams with bookmarks, a 410 Gone that lists again, and a broken stream.

#include "tessera/k8s/pod_watcher.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "fake_api_server.hpp"
#include "support/cluster_builders.hpp"
#include "tessera/k8s/placement_annotation.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

const std::string kPlacement =
    R"({"gpus":[0,1],"core_groups":[0],"memory":[{"numa":0,"bytes":8589934592}],"affinity":"same-numa"})";

// A v1.Pod as the API server lists it: 2 GPUs, 8 CPUs, 8 GiB, bound to `node` when given.
json bound_pod(const std::string& name, const std::string& uid, const std::string& node,
               const std::string& placement = kPlacement, const std::string& phase = "Running") {
  json annotations = json::object();
  if (!placement.empty()) annotations[std::string(kPlacementAnnotation)] = placement;
  const json requests = {{"cpu", "8"}, {"memory", "8Gi"}, {"nvidia.com/gpu", "2"}};
  json spec = {
      {"containers",
       {{{"name", "main"}, {"resources", {{"requests", requests}, {"limits", requests}}}}}},
      {"priority", 10}};
  if (!node.empty()) spec["nodeName"] = node;
  return json{{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"metadata",
               {{"name", name},
                {"namespace", "ml"},
                {"uid", uid},
                {"resourceVersion", "7"},
                {"annotations", annotations}}},
              {"spec", spec},
              {"status", {{"phase", phase}}}};
}

std::shared_ptr<const hw::HostTopology> topology(const char* host) {
  test::ServerSpec spec;
  spec.hostname = host;
  return test::server(spec);
}

bool holds(const ExtenderService& s, const std::string& name) {
  return s.snapshot().find_pod(name).has_value();
}

TEST(ExtenderRestore, ABoundPodComesBackFromItsAnnotationAndLeavesWhenGone) {
  ExtenderService s({}, nullptr);
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  s.observe_pod(bound_pod("train-0", "u0", "n1"));
  const auto state = s.snapshot();
  const auto i = state.find_pod("ml/train-0");
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(state.pod(*i).assignment.gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(state.pod(*i).pod.request.gpus, 2);
  // Seen again (a relist, a MODIFIED event): nothing changes.
  s.observe_pod(bound_pod("train-0", "u0", "n1"));
  EXPECT_EQ(s.snapshot().pods().size(), state.pods().size());
  // A DELETED event of another pod of that name leaves it; its own removes it.
  s.forget_pod(bound_pod("train-0", "other-uid", "n1"));
  EXPECT_TRUE(holds(s, "ml/train-0"));
  s.forget_pod(bound_pod("train-0", "u0", "n1"));
  EXPECT_FALSE(holds(s, "ml/train-0"));
}

TEST(ExtenderRestore, PodsWaitForTheirNodesTopology) {
  ExtenderService s({}, nullptr);
  s.observe_pod(bound_pod("train-0", "u0", "n1"));
  EXPECT_FALSE(holds(s, "ml/train-0"));
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  EXPECT_TRUE(holds(s, "ml/train-0")) << "restored once n1 reported";
}

TEST(ExtenderRestore, FinishedUnboundAndMalformedPodsAreNotTakenBack) {
  ExtenderService s({}, nullptr);
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  s.observe_pod(bound_pod("done", "u1", "n1", kPlacement, "Succeeded"));
  s.observe_pod(bound_pod("pending", "u2", ""));
  s.observe_pod(bound_pod("foreign", "u3", "n1", ""));
  s.observe_pod(bound_pod("corrupt", "u4", "n1", R"({"gpus":"all"})"));
  s.observe_pod(bound_pod("big", "u5", "n1", R"({"gpus":[99],"affinity":"same-numa"})"));
  s.observe_pod(json("not a pod"));
  // Fields of the wrong type are skipped, not thrown.
  s.observe_pod(json{{"metadata", "x"}});
  s.observe_pod(json{{"metadata", {{"name", 5}}}, {"status", {{"phase", 3}}}});
  s.forget_pod(json{{"metadata", {{"namespace", json::array()}}}});
  s.resync(json::array({json{{"metadata", 7}}, json(1)}), s.list_mark());
  EXPECT_TRUE(s.snapshot().pods().empty());
  // A running pod that then finishes leaves the state.
  s.observe_pod(bound_pod("job", "u6", "n1"));
  ASSERT_TRUE(holds(s, "ml/job"));
  s.observe_pod(bound_pod("job", "u6", "n1", kPlacement, "Failed"));
  EXPECT_FALSE(holds(s, "ml/job"));
}

TEST(ExtenderRestore, AResyncDropsPodsTheListNoLongerHas) {
  ExtenderService s({}, nullptr);
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  s.observe_pod(bound_pod("a", "ua", "n1"));
  s.observe_pod(
      bound_pod("b", "ub", "n1", R"({"gpus":[2,3],"core_groups":[1],"affinity":"same-numa"})"));
  const std::int64_t mark = s.list_mark();
  // Bound after the list was asked for: the list cannot know it yet, so it stays.
  s.observe_pod(
      bound_pod("c", "uc", "n1", R"({"gpus":[4,5],"core_groups":[4],"affinity":"same-numa"})"));
  s.resync(json::array({bound_pod("a", "ua", "n1")}), mark);
  EXPECT_TRUE(holds(s, "ml/a"));
  EXPECT_FALSE(holds(s, "ml/b"));
  EXPECT_TRUE(holds(s, "ml/c"));
}

// A bind records where the pod went, in the form the annotation is read back in.
TEST(ExtenderRestore, BindHandsThePlacementToTheBinder) {
  auto binder = std::make_shared<RecordOnlyBinder>();
  ExtenderService s({}, binder);
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  json pod = bound_pod("train-0", "u0", "");
  ExtenderArgs args;
  args.pod = pod;
  args.node_names = {"n1"};
  ASSERT_TRUE(s.filter(args));
  ExtenderBindingArgs b;
  b.pod_name = "train-0";
  b.pod_namespace = "ml";
  b.pod_uid = "u0";
  b.node = "n1";
  ASSERT_EQ(s.bind(b).error, "");
  ASSERT_EQ(binder->bindings().size(), 1u);
  auto placement = parse_placement_annotation(binder->bindings()[0].placement);
  ASSERT_TRUE(placement) << placement.error().message();
  const auto state = s.snapshot();
  EXPECT_EQ(placement->gpus, state.pod(*state.find_pod("ml/train-0")).assignment.gpus);

  // The same pod, listed by a restarted extender with that annotation, comes back identically.
  ExtenderService restarted({}, nullptr);
  ASSERT_TRUE(restarted.put_topology("n1", topology("n1")));
  restarted.observe_pod(bound_pod("train-0", "u0", "n1", binder->bindings()[0].placement));
  const auto again = restarted.snapshot();
  ASSERT_TRUE(again.find_pod("ml/train-0"));
  EXPECT_EQ(again.pod(*again.find_pod("ml/train-0")).assignment.gpus, placement->gpus);
}

std::string token_file() {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessera_watch_token_" + std::to_string(::getpid()));
  std::ofstream(path) << "t\n";
  return path.string();
}

ApiServerClient client_for(const test::FakeApiServer& api) {
  ApiServerConfig c;
  c.url = api.url();
  c.token_file = token_file();
  return *ApiServerClient::create(c);
}

// Streams `lines` (each a watch event) and ends the answer.
void stream(httplib::Response& res, std::vector<std::string> lines) {
  res.status = 200;
  res.body.clear();  // the fake's default answer
  res.set_chunked_content_provider(
      "application/json",
      [lines = std::move(lines), i = std::size_t{0}](std::size_t, httplib::DataSink& sink) mutable {
        if (i < lines.size()) {
          const std::string line = lines[i++] + "\n";
          sink.write(line.data(), line.size());
        } else {
          sink.done();
        }
        return true;
      });
}

std::string event(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump();
}

TEST(PodWatcher, ListsInPagesThenWatchesFromTheListsVersion) {
  test::FakeApiServer api([](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET") return;
    res.status = 200;
    if (req.has_param("watch")) {
      stream(res, {event("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "12"}}}}),
                   event("DELETED", bound_pod("a", "ua", "n1")),
                   event("ADDED",
                         bound_pod("c", "uc", "n1",
                                   R"({"gpus":[4,5],"core_groups":[4],"affinity":"same-numa"})"))});
      return;
    }
    const bool second = req.get_param_value("continue") == "page+2/=";
    json list{{"kind", "PodList"},
              {"metadata", {{"resourceVersion", "10"}, {"continue", second ? "" : "page+2/="}}},
              {"items",
               json::array(
                   {second ? bound_pod("b", "ub", "n1",
                                       R"({"gpus":[2,3],"core_groups":[1],"affinity":"same-numa"})")
                           : bound_pod("a", "ua", "n1")})}};
    res.set_content(list.dump(), "application/json");
  });
  ExtenderService s({}, nullptr);
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  PodWatcher w(client_for(api), s);
  auto version = w.list();
  ASSERT_TRUE(version) << version.error().message();
  EXPECT_EQ(*version, "10");
  EXPECT_TRUE(holds(s, "ml/a"));
  EXPECT_TRUE(holds(s, "ml/b")) << "the second page";
  const auto requests = api.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[0].path.find("/api/v1/pods"), std::string::npos);

  auto next = w.watch(*version, [] { return false; });
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(*next, "7") << "the last event's version (the pods carry 7)";
  EXPECT_FALSE(holds(s, "ml/a"));
  EXPECT_TRUE(holds(s, "ml/c"));
}

TEST(PodWatcher, A410ListsAgainAndABrokenStreamIsAnError) {
  std::atomic<int> watches{0};
  test::FakeApiServer api([&](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" || !req.has_param("watch")) return;
    if (++watches == 1) {
      stream(res,
             {event("ERROR",
                    {{"kind", "Status"}, {"code", 410}, {"message", "too old resource version"}})});
    } else if (watches == 2) {
      stream(res, {"{not json"});
    } else {
      stream(res, {json{{"type", 5}, {"object", {{"metadata", {{"resourceVersion", 9}}}}}}.dump()});
    }
  });
  ExtenderService s({}, nullptr);
  PodWatcher w(client_for(api), s);
  auto gone = w.watch("5", [] { return false; });
  ASSERT_TRUE(gone);
  EXPECT_EQ(*gone, "") << "list again";
  auto broken = w.watch("5", [] { return false; });
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find("not JSON"), std::string::npos);
  auto wrong = w.watch("5", [] { return false; });
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("cannot read"), std::string::npos);
}

// run(): a failed list backs off and tries again; after a list the watch goes on until stopped.
TEST(PodWatcher, RunRetriesAFailedListAndKeepsWatching) {
  std::atomic<int> lists{0};
  std::atomic<int> watches{0};
  test::FakeApiServer api([&](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET") return;
    if (req.has_param("watch")) {
      ++watches;
      stream(res, {});
      return;
    }
    if (++lists == 1) {
      test::status_answer(res, 500, "etcd is not ready");
      return;
    }
    res.status = 200;
    res.set_content(json{{"kind", "PodList"},
                         {"metadata", {{"resourceVersion", "3"}}},
                         {"items", json::array({bound_pod("a", "ua", "n1")})}}
                        .dump(),
                    "application/json");
  });
  ExtenderService s({}, nullptr);
  ASSERT_TRUE(s.put_topology("n1", topology("n1")));
  PodWatchOptions o;
  o.min_backoff = std::chrono::milliseconds(10);
  PodWatcher w(client_for(api), s, o);
  std::thread t([&] { w.run([&] { return watches.load() >= 3; }); });
  t.join();
  EXPECT_EQ(lists.load(), 2);
  EXPECT_TRUE(holds(s, "ml/a"));
}

// cancel() ends a run whose watch is waiting for an event that does not come (shutdown).
TEST(PodWatcher, CancelEndsAWatchThatWaits) {
  std::atomic<bool> watching{false};
  test::FakeApiServer api([&](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET") return;
    res.status = 200;
    res.body.clear();
    if (!req.has_param("watch")) {
      res.set_content(json{{"kind", "PodList"},
                           {"metadata", {{"resourceVersion", "3"}}},
                           {"items", json::array()}}
                          .dump(),
                      "application/json");
      return;
    }
    watching = true;
    res.set_chunked_content_provider("application/json", [](std::size_t, httplib::DataSink& sink) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return sink.is_writable();
    });
  });
  ExtenderService s({}, nullptr);
  PodWatcher w(client_for(api), s);
  std::thread t([&] { w.run([] { return false; }); });
  for (int i = 0; i < 500 && !watching; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(watching.load());
  const auto start = std::chrono::steady_clock::now();
  w.cancel();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace tessera::k8s
