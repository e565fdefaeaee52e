// The extender's cost: the goal is at least 2,000 filter requests per second on loopback.
//   ./build/bench/tessera_extender_bench
//
// BM_FilterOverLoopback: one filter request (a 2-GPU guaranteed pod needing one NUMA node, the
//   100 node names as a node-cache-capable kube-scheduler sends them) per iteration, POSTed with a
//   keep-alive httplib::Client to the real extender server on 127.0.0.1 over 100 rtx4090-2s
//   nodes; items_per_second is requests per second. With ->Threads(n), n clients at once. The
//   client sets TCP_NODELAY as Go's (kube-scheduler's) does; without it each request waits for
//   the server's delayed ACK (about 28 requests per second).
// BM_FilterInProcess: the same body through ExtenderService::handle_filter (JSON parse, pod
//   translation, filter on 100 nodes, JSON serialise), without HTTP.
// BM_ParseExtenderArgs: only parsing the body into ExtenderArgs and translating the pod.

#include <benchmark/benchmark.h>
#include <httplib.h>

#include <memory>
#include <mutex>

#include "served_extender.hpp"
#include "tessera/core/log.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/extender_service.hpp"
#include "tessera/k8s/pod_translation.hpp"

namespace {

using namespace tessera;
using nlohmann::json;

constexpr int kNodes = 100;

std::string filter_body() {
  json names = json::array();
  for (int i = 0; i < kNodes; ++i) names.push_back(fmt::format("node{:03}", i));
  const json requests = {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "2"}};
  const json pod = {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", "llm-serving-7d9f8b6c4-x2kqz"},
        {"namespace", "inference"},
        {"uid", "6f1c2d3e-4b5a-4c7d-9e8f-0a1b2c3d4e5f"},
        {"labels", {{"app", "llm-serving"}}},
        {"annotations", {{"tessera.io/qos", "guaranteed"}, {"tessera.io/topology", "numa"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "server"},
           {"image", "vllm/vllm-openai:v0.6.3"},
           {"resources", {{"requests", requests}, {"limits", requests}}}}}},
        {"priority", 1000000},
        {"schedulerName", "default-scheduler"}}},
      {"status", {{"phase", "Pending"}, {"qosClass", "Guaranteed"}}}};
  return json{{"Pod", pod}, {"NodeNames", names}}.dump();
}

struct Fixture {
  bench::ServedExtender served = bench::serve_extender(kNodes);
  std::string body = filter_body();
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_FilterOverLoopback(benchmark::State& state) {
  Fixture& f = fixture();
  httplib::Client client("127.0.0.1", f.served.server->port());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // as Go's net/http client (kube-scheduler) does by default
  for (auto _ : state) {
    auto r = client.Post("/filter", f.body, "application/json");
    if (!r || r->status != 200) {
      state.SkipWithError("filter request failed");
      break;
    }
    benchmark::DoNotOptimize(r->body.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FilterOverLoopback)->Threads(1)->Threads(2)->UseRealTime();

void BM_FilterInProcess(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    auto r = f.served.service->handle_filter(f.body);
    benchmark::DoNotOptimize(r.body.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FilterInProcess);

void BM_ParseExtenderArgs(benchmark::State& state) {
  const std::string body = filter_body();
  for (auto _ : state) {
    auto j = k8s::parse_body(body, "ExtenderArgs");
    auto a = k8s::parse_extender_args(*j);
    auto p = k8s::translate_pod(a->pod);
    benchmark::DoNotOptimize(p->request.gpus);
  }
}
BENCHMARK(BM_ParseExtenderArgs);

}  // namespace

BENCHMARK_MAIN();
