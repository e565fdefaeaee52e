// The extender's verbs on a small cluster, in process and over HTTP: filter (both node forms,
// unknown nodes, unresolvable nodes), prioritize, topology-aware preemption answered by UID,
// bind through the Binder, the agent's topology push, and a server that keeps serving after
// malformed requests.

#include "tessera/k8s/extender_service.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include "support/cluster_builders.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// A v1.Pod as kube-scheduler sends it, reduced to what the extender reads plus some noise.
json pod_json(const std::string& name, const std::string& uid, int priority, int gpus, int cpus,
              const std::string& topology = "", const std::string& qos = "") {
  json annotations = json::object();
  if (!topology.empty()) annotations["tessera.io/topology"] = topology;
  if (!qos.empty()) annotations["tessera.io/qos"] = qos;
  json requests = {{"cpu", std::to_string(cpus)}, {"memory", "8Gi"}};
  if (gpus > 0) requests["nvidia.com/gpu"] = std::to_string(gpus);
  return json{{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"metadata",
               {{"name", name},
                {"namespace", "ml"},
                {"uid", uid},
                {"annotations", annotations},
                {"labels", {{"app", name}}}}},
              {"spec",
               {{"containers",
                 {{{"name", "main"},
                   {"image", "x"},
                   {"resources", {{"requests", requests}, {"limits", requests}}}}}},
                {"priority", priority},
                {"schedulerName", "default-scheduler"}}},
              {"status", {{"phase", "Pending"}, {"qosClass", "Burstable"}}}};
}

ExtenderArgs args_for(const json& pod, std::vector<std::string> nodes) {
  ExtenderArgs a;
  a.pod = pod;
  a.node_names = std::move(nodes);
  return a;
}

class ExtenderServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binder_ = std::make_shared<RecordOnlyBinder>();
    service_ = std::make_unique<ExtenderService>(ExtenderConfig{}, binder_);
    for (const char* n : {"n1", "n2"}) {
      test::ServerSpec spec;
      spec.hostname = n;
      ASSERT_TRUE(service_->put_topology(n, test::server(spec)));
    }
  }

  // filter, then bind to `node`: what kube-scheduler does for a pod that fits.
  void schedule(const json& pod, const std::string& node) {
    auto f = service_->filter(args_for(pod, {"n1", "n2"}));
    ASSERT_TRUE(f) << f.error().message();
    ExtenderBindingArgs b;
    b.pod_name = pod["metadata"]["name"];
    b.pod_namespace = pod["metadata"]["namespace"];
    b.pod_uid = pod["metadata"]["uid"];
    b.node = node;
    const auto r = service_->bind(b);
    ASSERT_EQ(r.error, "");
  }

  std::shared_ptr<RecordOnlyBinder> binder_;
  std::unique_ptr<ExtenderService> service_;
};

TEST_F(ExtenderServiceTest, FilterKeepsNodesThatFitAndExplainsTheRest) {
  auto r = service_->filter(
      args_for(pod_json("svc", "u-svc", 1000, 4, 8, "numa", "guaranteed"), {"n1", "n2", "n3"}));
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_TRUE(r->node_names);
  EXPECT_EQ(*r->node_names, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_FALSE(r->nodes);
  EXPECT_EQ(r->failed_nodes.at("n3"), "no topology reported for this node");
  EXPECT_EQ(r->error, "");

  // 8 GPUs on one NUMA node: no node can ever hold it, preemption cannot help.
  auto big = service_->filter(
      args_for(pod_json("big", "u-big", 1000, 8, 8, "numa", "guaranteed"), {"n1", "n2"}));
  ASSERT_TRUE(big);
  EXPECT_TRUE(big->node_names->empty());
  EXPECT_EQ(big->failed_and_unresolvable_nodes.size(), 2u);
  EXPECT_TRUE(big->failed_nodes.empty());
  // ... but as best-effort it spreads across sockets.
  auto be = service_->filter(args_for(pod_json("be", "u-be", 0, 8, 8), {"n1", "n2"}));
  ASSERT_TRUE(be);
  EXPECT_EQ(be->node_names->size(), 2u);
}

TEST_F(ExtenderServiceTest, FilterAnswersInTheNodeListFormWhenAskedInIt) {
  ExtenderArgs a;
  a.pod = pod_json("svc", "u-svc", 1000, 2, 4, "numa", "guaranteed");
  a.nodes = json{{"metadata", json::object()},
                 {"items",
                  {{{"metadata", {{"name", "n2"}}}, {"spec", json::object()}},
                   {{"metadata", {{"name", "elsewhere"}}}, {"status", json::object()}}}}};
  auto r = service_->filter(a);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->node_names);
  ASSERT_TRUE(r->nodes);
  ASSERT_EQ((*r->nodes)["items"].size(), 1u);
  EXPECT_EQ((*r->nodes)["items"][0]["metadata"]["name"], "n2");
  EXPECT_TRUE((*r->nodes)["items"][0].contains("spec"));  // the item as it was sent
  EXPECT_EQ(r->failed_nodes.count("elsewhere"), 1u);
}

TEST_F(ExtenderServiceTest, PrioritizeScoresWithinTheExtenderRange) {
  // Leave n1 with a half-used NUMA node: a 2-GPU NUMA pod still fits on both.
  schedule(pod_json("a", "u-a", 10, 2, 4), "n1");
  auto r =
      service_->prioritize(args_for(pod_json("p", "u-p", 100, 2, 4, "numa"), {"n1", "n2", "x"}));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 3u);
  for (const auto& hp : *r) {
    EXPECT_GE(hp.score, kMinExtenderPriority);
    EXPECT_LE(hp.score, kMaxExtenderPriority);
  }
  EXPECT_EQ((*r)[2].host, "x");
  EXPECT_EQ((*r)[2].score, 0);
  EXPECT_GT((*r)[0].score, 0);
  EXPECT_GT((*r)[1].score, 0);
}

TEST_F(ExtenderServiceTest, BindRecordsTheAssignmentAndCallsTheBinder) {
  ExtenderBindingArgs b;
  b.pod_name = "never-filtered";
  b.pod_namespace = "ml";
  b.pod_uid = "u-unknown";
  b.node = "n1";
  EXPECT_NE(service_->bind(b).error.find("not seen by filter"), std::string::npos);
  EXPECT_TRUE(binder_->bindings().empty());

  schedule(pod_json("train", "u-train", 10, 4, 8), "n1");
  ASSERT_EQ(binder_->bindings().size(), 1u);
  EXPECT_EQ(binder_->bindings()[0].pod_name, "train");
  EXPECT_EQ(binder_->bindings()[0].node, "n1");
  const auto state = service_->snapshot();
  const auto i = state.find_pod("ml/train");
  ASSERT_TRUE(i);
  EXPECT_EQ(state.pod(*i).assignment.gpus.size(), 4u);
  EXPECT_EQ(state.pod(*i).pod.uid, "u-train");
  // A retried bind of the same pod is a no-op.
  ExtenderBindingArgs again;
  again.pod_name = "train";
  again.pod_namespace = "ml";
  again.pod_uid = "u-train";
  again.node = "n1";
  EXPECT_EQ(service_->bind(again).error, "");
  EXPECT_EQ(service_->snapshot().nodes()[0].pods().size(), 1u);
  // The pod's resources come back when it is released.
  EXPECT_TRUE(service_->release("ml/train"));
  EXPECT_FALSE(service_->release("ml/train"));
}

TEST_F(ExtenderServiceTest, PreemptionFreesATopologyFitAndNamesVictimsByUid) {
  // Fill both NUMA nodes of n1 and of n2 with low-priority 2-GPU pods.
  std::vector<std::string> uids;
  for (int i = 0; i < 4; ++i) {
    const std::string uid = "u-low-" + std::to_string(i);
    schedule(pod_json("low-" + std::to_string(i), uid, 10 + i, 2, 4), "n1");
    uids.push_back(uid);
  }
  for (int i = 0; i < 4; ++i) {
    schedule(pod_json("other-" + std::to_string(i), "u-other-" + std::to_string(i), 10, 2, 4),
             "n2");
  }
  const json svc = pod_json("svc", "u-svc", 1000, 4, 8, "numa", "guaranteed");
  auto f = service_->filter(args_for(svc, {"n1", "n2"}));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->node_names->empty());
  EXPECT_EQ(f->failed_nodes.size(), 2u);  // preemption can help

  // kube-scheduler proposes n1 with its own victims (a pod the extender never saw included).
  ExtenderPreemptionArgs p;
  p.pod = svc;
  p.node_name_to_meta_victims = std::map<std::string, MetaVictims>{
      {"n1", MetaVictims{{MetaPod{"u-low-0"}, MetaPod{"u-never-seen"}}, 0}}};
  auto r = service_->preempt(p);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->node_name_to_meta_victims.size(), 1u);
  const auto& mv = r->node_name_to_meta_victims.at("n1");
  // Two 2-GPU pods on one NUMA node free the 4 GPUs it needs there.
  ASSERT_EQ(mv.pods.size(), 2u);
  for (const auto& v : mv.pods) {
    EXPECT_NE(std::find(uids.begin(), uids.end(), v.uid), uids.end()) << v.uid;
  }
  // The victims' resources are free now: the preemptor passes the filter on n1 and binds.
  auto again = service_->filter(args_for(svc, {"n1", "n2"}));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again->node_names, std::vector<std::string>{"n1"});
  schedule(svc, "n1");
  const auto state = service_->snapshot();
  const auto i = state.find_pod("ml/svc");
  ASSERT_TRUE(i);
  EXPECT_EQ(state.pod(*i).assignment.affinity, cluster::Affinity::kSameNuma);

  // Proposed nodes without a reported topology are vetoed.
  ExtenderPreemptionArgs unknown;
  unknown.pod = svc;
  unknown.node_name_to_meta_victims =
      std::map<std::string, MetaVictims>{{"n9", MetaVictims{{MetaPod{"x"}}, 0}}};
  auto none = service_->preempt(unknown);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->node_name_to_meta_victims.empty());
}

// With the API server's pod events, victims keep their GPUs until the API server says they are
// gone (they run until they terminate): the preemptor fits only after their DELETED events.
TEST_F(ExtenderServiceTest, WithPodEventsVictimsHoldTheirRoomUntilTheyAreGone) {
  ExtenderConfig config;
  config.pod_events = true;
  service_ = std::make_unique<ExtenderService>(config, binder_);
  for (const char* n : {"n1", "n2"}) {
    test::ServerSpec spec;
    spec.hostname = n;
    ASSERT_TRUE(service_->put_topology(n, test::server(spec)));
  }
  std::vector<json> low;
  for (int i = 0; i < 4; ++i) {
    low.push_back(pod_json("low-" + std::to_string(i), "u-low-" + std::to_string(i), 10, 2, 4));
    schedule(low.back(), "n1");
    schedule(pod_json("other-" + std::to_string(i), "u-other-" + std::to_string(i), 10, 2, 4),
             "n2");
  }
  const json svc = pod_json("svc", "u-svc", 1000, 4, 8, "numa", "guaranteed");
  ExtenderPreemptionArgs p;
  p.pod = svc;
  p.node_name_to_meta_victims =
      std::map<std::string, MetaVictims>{{"n1", MetaVictims{{MetaPod{"u-low-0"}}, 0}}};
  auto r = service_->preempt(p);
  ASSERT_TRUE(r) << r.error().message();
  const auto& victims = r->node_name_to_meta_victims.at("n1").pods;
  ASSERT_EQ(victims.size(), 2u);
  auto f = service_->filter(args_for(svc, {"n1"}));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->node_names->empty()) << "the victims still run";
  for (const auto& v : victims) {
    for (const json& pod : low) {
      if (pod["metadata"]["uid"].get<std::string>() == v.uid) service_->forget_pod(pod);
    }
  }
  f = service_->filter(args_for(svc, {"n1"}));
  ASSERT_TRUE(f);
  EXPECT_EQ(*f->node_names, std::vector<std::string>{"n1"});
}

TEST_F(ExtenderServiceTest, PreemptTellsAMalformedSearchFromNoCandidate) {
  // No candidate: more GPUs than a node has. kube-scheduler gets an empty answer (200), which
  // vetoes every proposed node.
  ExtenderPreemptionArgs huge;
  huge.pod = pod_json("huge", "u-huge", 1000, 64, 8);
  huge.node_name_to_meta_victims =
      std::map<std::string, MetaVictims>{{"n1", MetaVictims{{MetaPod{"x"}}, 0}}};
  auto none = service_->preempt(huge);
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_TRUE(none->node_name_to_meta_victims.empty());
  const HttpResponse vetoed = service_->handle_preempt(to_json(huge).dump());
  EXPECT_EQ(vetoed.status, 200) << vetoed.body;
  EXPECT_TRUE(json::parse(vetoed.body)["NodeNameToMetaVictims"].empty()) << vetoed.body;

  // A search the policy refuses (alpha outside [0, 1]) is an error that names the setting: 400.
  ExtenderConfig bad;
  bad.preemption.alpha = 1.5;
  ExtenderService refusing(bad, binder_);
  test::ServerSpec spec;
  spec.hostname = "n1";
  ASSERT_TRUE(refusing.put_topology("n1", test::server(spec)));
  ExtenderPreemptionArgs one = huge;
  one.pod = pod_json("svc", "u-svc", 1000, 1, 1);
  const auto refused = refusing.preempt(one);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("cannot be searched: alpha 1.5 is outside [0, 1]"),
            std::string::npos)
      << refused.error().message();
  const HttpResponse answer = refusing.handle_preempt(to_json(one).dump());
  EXPECT_EQ(answer.status, 400) << answer.body;
  EXPECT_NE(answer.body.find("alpha 1.5"), std::string::npos) << answer.body;
}

TEST_F(ExtenderServiceTest, TopologyPushAddsAndUpdatesNodes) {
  test::ServerSpec spec;
  spec.hostname = "gpu-host-7";
  const json topo = hw::to_json(*test::server(spec));
  const json push{{"node", "n7"}, {"topology", topo}};
  auto r = service_->handle_put_topology("n7", push.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["result"], "added");
  r = service_->handle_put_topology("n7", push.dump());
  EXPECT_EQ(json::parse(r.body)["result"], "updated");
  EXPECT_EQ(service_->node_count(), 3u);

  EXPECT_EQ(service_->handle_put_topology("n8", push.dump()).status, 400);  // name mismatch
  json broken = push;
  broken["topology"]["nodes"][1]["kind"] = "toaster";
  const auto bad = service_->handle_put_topology("n7", broken.dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("nodes"), std::string::npos) << bad.body;
  EXPECT_EQ(service_->handle_put_topology("n7", "{").status, 400);

  // A refresh that no longer holds what is bound there is refused and changes nothing.
  schedule(pod_json("big", "u-big", 10, 4, 8, "numa"), "n1");
  test::ServerSpec small;
  small.gpus_per_numa = 1;
  const json shrink{{"node", "n1"}, {"topology", hw::to_json(*test::server(small))}};
  EXPECT_EQ(service_->handle_put_topology("n1", shrink.dump()).status, 409);
  EXPECT_EQ(service_->snapshot().node(0).topology().gpus().size(), 8u);

  const json nodes = service_->nodes_json();
  ASSERT_EQ(nodes["nodes"].size(), 3u);
}

// An NCCL topology names no memory: the filter does not count memory there, unless the extender is
// given it (--numa-memory), which then holds for pushed topologies too.
TEST(ExtenderNumaMemory, UnknownMemoryIsNotCountedUnlessGiven) {
  auto ndv5 = hw::load_topology_file(std::string(TESSERA_SHARED_DATA_DIR) +
                                     "/topology/nccl_azure/ndv5-topo.xml");
  ASSERT_TRUE(ndv5) << ndv5.error().message();
  json pod = pod_json("llm", "u-llm", 1000, 2, 4, "numa", "guaranteed");
  for (const char* kind : {"requests", "limits"}) {
    pod["spec"]["containers"][0]["resources"][kind]["memory"] = "300Gi";
  }

  ExtenderService unknown(ExtenderConfig{}, nullptr);
  ASSERT_TRUE(unknown.put_topology("ndv5", std::make_shared<const hw::HostTopology>(*ndv5)));
  auto fits = unknown.filter(args_for(pod, {"ndv5"}));
  ASSERT_TRUE(fits) << fits.error().message();
  EXPECT_EQ(*fits->node_names, std::vector<std::string>{"ndv5"});

  ExtenderConfig config;
  config.numa_memory_bytes = 256 * test::kGiB;
  ExtenderService sized(config, nullptr);
  const json push{{"node", "ndv5"}, {"topology", hw::to_json(*ndv5)}};
  ASSERT_EQ(sized.handle_put_topology("ndv5", push.dump()).status, 200);
  EXPECT_EQ(sized.snapshot().node(0).topology().numa(1).local_memory_bytes, 256 * test::kGiB);
  auto refused = sized.filter(args_for(pod, {"ndv5"}));
  ASSERT_TRUE(refused) << refused.error().message();
  EXPECT_TRUE(refused->node_names->empty());
  EXPECT_EQ(refused->failed_and_unresolvable_nodes.count("ndv5"), 1u);
}

// Over HTTP: the verbs under a prefix, and garbage followed by good requests.
TEST(ExtenderHttp, MalformedRequestsGet400AndTheServerKeepsServing) {
  ExtenderConfig config;
  config.url_prefix = "/tessera";
  ExtenderService service(config, std::make_shared<RecordOnlyBinder>());
  test::ServerSpec spec;
  ASSERT_TRUE(service.put_topology("n1", test::server(spec)));
  HttpServerOptions o;
  o.max_body_bytes = 1 << 20;
  auto server = HttpServer::create(o);
  ASSERT_TRUE(server);
  service.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  httplib::Client c("127.0.0.1", (*server)->port());
  const std::string good =
      json{{"Pod", pod_json("svc", "u1", 100, 2, 4, "numa")}, {"NodeNames", {"n1"}}}.dump();

  json bad_quantity{{"Pod", pod_json("q", "u-q", 1, 1, 1)}, {"NodeNames", {"n1"}}};
  bad_quantity["Pod"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "lots";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/tessera/filter", "this is not json"},
      {"/tessera/filter", "{\"Pod\": 5}"},
      {"/tessera/filter", "{\"NodeNames\": {\"a\": 1}}"},
      {"/tessera/filter", json{{"Pod", pod_json("x", "u", 1, 1, 1)}, {"NodeNames", {1}}}.dump()},
      {"/tessera/prioritize", "[]"},
      {"/tessera/preempt", "{\"NodeNameToMetaVictims\": []}"},
      {"/tessera/bind", "{\"PodName\": 3}"},
      {"/tessera/filter", ""},
      {"/tessera/filter", bad_quantity.dump()},
  };
  for (const auto& [path, body] : bad) {
    auto r = c.Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << " " << body;
    const json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object()) << r->body;
    EXPECT_FALSE(e["error"].get<std::string>().empty());
    auto ok = c.Post("/tessera/filter", good, "application/json");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
  }
  auto huge = c.Post("/tessera/filter", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  auto ok = c.Post("/tessera/filter", good, "application/json");
  ASSERT_TRUE(ok);
  const json result = json::parse(ok->body);
  EXPECT_EQ(result["NodeNames"], json::array({"n1"}));
  EXPECT_TRUE(result.contains("FailedNodes"));

  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(json::parse(health->body)["nodes"], 1);
  auto nodes = c.Get("/tessera/v1/nodes");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(json::parse(nodes->body)["nodes"].size(), 1u);
  EXPECT_EQ(c.Post("/filter", good, "application/json")->status, 404);  // the prefix is required
  auto del = c.Delete("/tessera/v1/pods/ml/nothing");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 404);
}

// With a write token, a topology PUT or a release without it (or with another) is refused and
// changes nothing; kube-scheduler's verbs still need none.
TEST(ExtenderHttp, WritesNeedTheBearerTokenWhenOneIsSet) {
  ExtenderConfig config;
  config.write_token = "s3cret-token";
  ExtenderService service(config, std::make_shared<RecordOnlyBinder>());
  auto server = HttpServer::create(HttpServerOptions{});
  ASSERT_TRUE(server);
  service.register_routes(**server);
  ASSERT_TRUE((*server)->start());
  httplib::Client c("127.0.0.1", (*server)->port());
  test::ServerSpec spec;
  const std::string push =
      json{{"node", "n1"}, {"topology", hw::to_json(*test::server(spec))}}.dump();

  for (const char* given : {"", "Bearer wrong-token!", "Bearer s3cret-tokenX", "s3cret-token"}) {
    httplib::Headers headers;
    if (*given != '\0') headers.emplace("Authorization", given);
    auto put = c.Put("/tessera/v1/nodes/n1/topology", headers, push, "application/json");
    ASSERT_TRUE(put) << given;
    EXPECT_EQ(put->status, 401) << given;
    EXPECT_NE(put->body.find("--write-token-file"), std::string::npos) << put->body;
    auto del = c.Delete("/tessera/v1/pods/ml/p", headers);
    ASSERT_TRUE(del) << given;
    EXPECT_EQ(del->status, 401) << given;
  }
  EXPECT_EQ(service.node_count(), 0u);

  const httplib::Headers with_token{{"Authorization", "Bearer s3cret-token"}};
  auto put = c.Put("/tessera/v1/nodes/n1/topology", with_token, push, "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200) << put->body;
  EXPECT_EQ(service.node_count(), 1u);
  auto del = c.Delete("/tessera/v1/pods/ml/p", with_token);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 404);  // past the check: no such pod is bound
  const std::string filter =
      json{{"Pod", pod_json("svc", "u1", 100, 2, 4, "numa")}, {"NodeNames", {"n1"}}}.dump();
  auto verb = c.Post("/filter", filter, "application/json");
  ASSERT_TRUE(verb);
  EXPECT_EQ(verb->status, 200) << verb->body;
}

}  // namespace
}  // namespace tessera::k8s
