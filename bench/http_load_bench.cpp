// Loopback load test of tessera's two HTTP servers, the scheduler extender and the node agent:
// closed-loop keep-alive clients send realistic requests as fast as the server answers them, for
// 60 s of wall time per benchmark (TESSERA_LOAD_SECONDS=2 for a quick check; read once, when the
// benchmarks are registered). All traffic goes to 127.0.0.1; the servers run in this process.
//   ./build/bench/tessera_http_load_bench --benchmark_filter=Extender
//   ./build/bench/tessera_http_load_bench --benchmark_filter='Load/.*threads:4$'
//   TESSERA_LOAD_SECONDS=2 ./build/bench/tessera_http_load_bench
//
// BM_ExtenderLoad: the real extender over 100 rtx4090-2s nodes (served_extender.hpp), on the
//   server's default options. Each client sends what kube-scheduler sends for one pod, one filter
//   then one prioritize: the filter body is the pod in tests/k8s/golden/llm_pod.json (a 2-GPU
//   guaranteed NUMA pod) with the 100 node names, the prioritize body the same pod with the names
//   the filter passed. The pods cycle through 256 copies of it with distinct names and UIDs, as
//   the scheduler sends pods of one ReplicaSet.
// BM_AgentLoad: the real node agent as `tessera agent` builds it (k8s::NodeAgent on the
//   rtx4090-2s preset, k8s::HttpServer with the command's 1 MiB body limit, k8s::add_agent_routes;
//   no refresh loop, as it would only run every 30 s). Each client repeats what a scheduler-side
//   reader and the node-side allocation writer send: GET /noderesourcetopology, GET /topology,
//   GET /allocations, POST /allocations (the whole set: four 2-GPU pods with two core groups and
//   64 GiB each, alternating with the same set less one pod, so every POST changes the state), and
//   GET /healthz as the kubelet's probe does.
//
// ->Threads(n): n clients at once, each with its own keep-alive httplib::Client (TCP_NODELAY, as
// Go's net/http). One benchmark iteration is one whole run: every client sends requests until the
// deadline (or a request cap it never reaches in practice), so the first iteration already lasts
// the minimum time and Google Benchmark runs it once. A failed request (a transport failure or a
// non-2xx status) is counted, not retried; a client stops after 100 of them.
// Counters: items_per_second is requests per second over all clients; p50_us and p99_us the
// latency percentiles of every request of every client, merged (a log histogram, within 1%);
// rss_start_mib and rss_end_mib this process's resident set (/proc/self/statm) once the server
// is up before the clients start, and after they stop; errors the failed requests (the benchmark
// is skipped with an error when there is any). The server and the clients share the machine's
// cores: on a small machine the clients' own cost is part of the figure.

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "served_extender.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/core/log.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/agent_http.hpp"
#include "tessera/k8s/node_agent.hpp"

namespace {

using namespace tessera;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 100;
constexpr int kPods = 256;
constexpr std::int64_t kMaxRequestsPerClient = 100'000'000;
constexpr std::int64_t kMaxErrorsPerClient = 100;

// TESSERA_LOAD_SECONDS, else 60.
double load_seconds() {
  if (const char* env = std::getenv("TESSERA_LOAD_SECONDS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end != env && *end == '\0' && s > 0 && s <= 3600) return s;
    fmt::print(stderr, "TESSERA_LOAD_SECONDS '{}': expected seconds in (0, 3600]; using 60\n", env);
  }
  return 60.0;
}
const double kSeconds = load_seconds();

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

// Request latencies in microseconds, in buckets 1% wide: constant memory however many requests,
// so the resident set measured is the server's and not the samples'.
class Histogram {
 public:
  void add(double micros) {
    const double i = micros <= 1.0 ? 0.0 : std::ceil(std::log(micros) / kLogStep);
    counts_[static_cast<std::size_t>(std::min(i, static_cast<double>(kBuckets - 1)))]++;
    ++total_;
  }
  void merge(const Histogram& other) {
    for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
  }
  // The upper edge of the bucket holding the p-quantile.
  double percentile(double p) const {
    if (total_ == 0) return 0;
    const auto rank = static_cast<std::uint64_t>(p * static_cast<double>(total_ - 1));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen > rank) return std::exp(static_cast<double>(i) * kLogStep);
    }
    return std::exp(static_cast<double>(kBuckets - 1) * kLogStep);
  }

 private:
  static constexpr std::size_t kBuckets = 2048;  // 1 us to about 700 s
  static inline const double kLogStep = std::log(1.01);
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
};

struct Tally {
  Histogram latency;
  std::int64_t requests = 0;
  std::int64_t errors = 0;
  bool capped = false;  // stopped at the request cap before the deadline
};

// One client: requests `send(client, n)` for n = 0, 1, ... until the deadline, the request cap or
// the error cap.
template <class Send>
void closed_loop(int port, Send send, Tally& t) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(10, 0);
  client.set_write_timeout(10, 0);
  const auto deadline = Clock::now() + std::chrono::duration<double>(kSeconds);
  for (std::int64_t n = 0;; ++n) {
    const auto t0 = Clock::now();
    if (t0 >= deadline) break;
    if (n == kMaxRequestsPerClient) {
      t.capped = true;
      break;
    }
    const bool ok = send(client, n);
    t.latency.add(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    ++t.requests;
    if (!ok && ++t.errors >= kMaxErrorsPerClient) break;
  }
}

bool ok(const httplib::Result& r) {
  return r && r->status >= 200 && r->status < 300;
}

// What one run's clients share: the server's port and start RSS (Setup), the merged latencies.
// One benchmark runs at a time, so one of these serves them all.
struct Run {
  std::mutex mu;
  int port = 0;
  double rss_start = 0;
  Histogram merged;
  int finished = 0;
};
Run g_run;

void begin_run(int port) {
  std::lock_guard lock(g_run.mu);
  g_run.port = port;
  g_run.rss_start = rss_mib();
  g_run.merged = Histogram{};
  g_run.finished = 0;
}

// After a client's loop: merges its latencies; the last client to finish sets the run's merged
// counters (counters are summed over threads, so the others leave them out).
void finish_client(benchmark::State& state, const Tally& t) {
  state.SetItemsProcessed(t.requests);
  state.counters["errors"] = static_cast<double>(t.errors);
  if (t.errors > 0) {
    state.SkipWithError(fmt::format("{} of {} requests failed", t.errors, t.requests).c_str());
  } else if (t.capped) {
    state.SkipWithError("a client reached the request cap before the deadline");
  }
  std::lock_guard lock(g_run.mu);
  g_run.merged.merge(t.latency);
  if (++g_run.finished < state.threads()) return;
  state.counters["p50_us"] = g_run.merged.percentile(0.50);
  state.counters["p99_us"] = g_run.merged.percentile(0.99);
  state.counters["rss_start_mib"] = g_run.rss_start;
  state.counters["rss_end_mib"] = rss_mib();
}

// --- The extender -----------------------------------------------------------------------------

struct ExtenderLoad {
  bench::ServedExtender served;
  std::vector<std::string> filter_bodies, prioritize_bodies;  // one of each per pod
};
std::unique_ptr<ExtenderLoad> g_extender;

json golden_pod() {
  std::ifstream in(TESSERA_SOURCE_DIR "/tests/k8s/golden/llm_pod.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

void setup_extender(const benchmark::State&) {
  auto x = std::make_unique<ExtenderLoad>();
  x->served = bench::serve_extender(kNodes);
  json names = json::array();
  for (int i = 0; i < kNodes; ++i) names.push_back(fmt::format("node{:03}", i));
  const json pod = golden_pod();
  // The names the filter passes: what kube-scheduler then asks to prioritize.
  const auto filtered =
      x->served.service->handle_filter(json{{"Pod", pod}, {"NodeNames", names}}.dump());
  if (filtered.status != 200) throw std::runtime_error("filter: " + filtered.body);
  const json passed = json::parse(filtered.body).at("NodeNames");
  if (passed.empty()) throw std::runtime_error("the filter passed no node: " + filtered.body);
  const std::string base = pod.at("metadata").at("name").get<std::string>();
  for (int i = 0; i < kPods; ++i) {
    json p = pod;
    p["metadata"]["name"] = fmt::format("{}-{:03}", base.substr(0, base.rfind('-')), i);
    p["metadata"]["uid"] = fmt::format("6f1c2d3e-4b5a-4c7d-9e8f-{:012x}", i);
    x->filter_bodies.push_back(json{{"Pod", p}, {"NodeNames", names}}.dump());
    x->prioritize_bodies.push_back(json{{"Pod", p}, {"NodeNames", passed}}.dump());
  }
  g_extender = std::move(x);
  begin_run(g_extender->served.server->port());
}

void teardown_extender(const benchmark::State&) {
  g_extender.reset();
}

void BM_ExtenderLoad(benchmark::State& state) {
  const ExtenderLoad& x = *g_extender;
  const int first_pod = state.thread_index() * (kPods / std::max(state.threads(), 1));
  Tally t;
  for (auto _ : state) {
    closed_loop(
        g_run.port,
        [&](httplib::Client& c, std::int64_t n) {
          const auto pod = static_cast<std::size_t>((first_pod + n / 2) % kPods);
          auto r = n % 2 == 0 ? c.Post("/filter", x.filter_bodies[pod], "application/json")
                              : c.Post("/prioritize", x.prioritize_bodies[pod], "application/json");
          if (r) benchmark::DoNotOptimize(r->body.data());
          return ok(r);
        },
        t);
  }
  finish_client(state, t);
}
BENCHMARK(BM_ExtenderLoad)
    ->Setup(setup_extender)
    ->Teardown(teardown_extender)
    ->Threads(1)
    ->Threads(4)
    ->Threads(16)
    ->MinTime(kSeconds)
    ->UseRealTime();

// --- The node agent ---------------------------------------------------------------------------

struct AgentLoad {
  core::SystemClock clock;
  std::unique_ptr<k8s::NodeAgent> agent;
  std::unique_ptr<k8s::HttpServer> server;
  std::array<std::string, 2> allocations;  // POST /allocations bodies, alternated
};
std::unique_ptr<AgentLoad> g_agent;

// Four 2-GPU pods, two on each NUMA node, each with two of its node's core groups and 64 GiB of
// its memory (as the extender places llm_pod.json); `pods` of them.
std::string allocation_body(const hw::HostTopology& t, int pods) {
  json list = json::array();
  for (int i = 0; i < pods; ++i) {
    const int numa = i / 2, half = i % 2;
    const auto gpus = t.gpus_of_numa(numa);
    const auto groups = t.core_groups_of_numa(numa);
    if (gpus.size() < 4 || groups.size() < 4) throw std::runtime_error("unexpected topology");
    list.push_back(
        {{"name", fmt::format("inference/llm-serving-7d9f8b6c4-{:03}", i)},
         {"gpus", {gpus[2 * half], gpus[2 * half + 1]}},
         {"core_groups", {groups[2 * half], groups[2 * half + 1]}},
         {"memory", json::array({{{"numa", numa}, {"bytes", std::int64_t{64} << 30}}})}});
  }
  return json{{"pods", list}}.dump();
}

void setup_agent(const benchmark::State&) {
  (void)core::set_log_level("warn");  // as serve_extender: the log lines would be the cost
  auto x = std::make_unique<AgentLoad>();
  k8s::AgentOptions options;  // as `tessera agent` builds them, on its defaults
  options.node_name = "node000";
  k8s::DiscoverFn discover = [] { return hw::preset("rtx4090-2s", "node000"); };
  auto agent = k8s::NodeAgent::create(options, discover, x->clock);
  if (!agent) throw std::runtime_error(agent.error().message());
  x->agent = std::move(*agent);
  k8s::HttpServerOptions server_options;
  server_options.max_body_bytes = std::size_t{1} << 20;  // as `tessera agent`
  auto server = k8s::HttpServer::create(server_options);
  if (!server) throw std::runtime_error(server.error().message());
  x->server = std::move(*server);
  k8s::NodeAgent& a = *x->agent;
  k8s::add_agent_routes(*x->server, a, [&a] {
    core::logger().info("agent: allocations changed (generation {})", a.generation());
  });
  if (auto st = x->server->start(); !st) throw std::runtime_error(st.error().message());
  const auto topology = a.topology();
  x->allocations = {allocation_body(*topology, 4), allocation_body(*topology, 3)};
  g_agent = std::move(x);
  begin_run(g_agent->server->port());
}

void teardown_agent(const benchmark::State&) {
  g_agent.reset();
}

void BM_AgentLoad(benchmark::State& state) {
  const AgentLoad& x = *g_agent;
  Tally t;
  for (auto _ : state) {
    closed_loop(
        g_run.port,
        [&](httplib::Client& c, std::int64_t n) {
          auto r = [&] {
            switch (n % 5) {
              case 0: return c.Get("/noderesourcetopology");
              case 1: return c.Get("/topology");
              case 2: return c.Get("/allocations");
              case 3:
                return c.Post("/allocations", x.allocations[static_cast<std::size_t>(n / 5 % 2)],
                              "application/json");
              default: return c.Get("/healthz");
            }
          }();
          if (r) benchmark::DoNotOptimize(r->body.data());
          return ok(r);
        },
        t);
  }
  finish_client(state, t);
}
BENCHMARK(BM_AgentLoad)
    ->Setup(setup_agent)
    ->Teardown(teardown_agent)
    ->Threads(1)
    ->Threads(4)
    ->Threads(16)
    ->MinTime(kSeconds)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
