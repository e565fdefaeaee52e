// The extender's HTTP server on loopback: requests per second and latency for a filter request as
// kube-scheduler sends it, alone and while abusive clients hold connections.
//   ./build/bench/tessera_http_server_bench
//
// BM_Filter/abusers:0: one filter request per iteration (the pod in tests/k8s/golden/llm_pod.json
//   with 100 node names, as a node-cache-capable kube-scheduler sends it) POSTed with a keep-alive
//   httplib::Client to the real extender over 100 rtx4090-2s nodes, on the server's default
//   options. items_per_second is requests per second; p50_us and p99_us the latency percentiles
//   of one client's requests (averaged over clients). ->Threads(n): n clients at once.
// BM_Filter/abusers:1: the same while 16 slow-loris clients trickle headers a byte every 100 ms
//   and 256 idle keep-alive connections stay open.

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "served_extender.hpp"
#include "tessera/core/log.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/extender_service.hpp"

namespace {

using namespace tessera;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 100;

std::string filter_body() {
  std::ifstream in(TESSERA_SOURCE_DIR "/tests/k8s/golden/llm_pod.json");
  std::stringstream text;
  text << in.rdbuf();
  json names = json::array();
  for (int i = 0; i < kNodes; ++i) names.push_back(fmt::format("node{:03}", i));
  return json{{"Pod", json::parse(text.str())}, {"NodeNames", names}}.dump();
}

struct Fixture {
  bench::ServedExtender served = bench::serve_extender(kNodes);
  std::string body = filter_body();
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

void send_all(int fd, std::string_view bytes) {
  (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

// Slow-loris and idle keep-alive clients, held open while a benchmark runs.
class Abusers {
 public:
  explicit Abusers(int port) {
    for (int i = 0; i < 256; ++i) {
      const int fd = connect_to(port);
      if (fd < 0) continue;
      send_all(fd, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      char buffer[1024];
      (void)::recv(fd, buffer, sizeof buffer, 0);
      fds_.push_back(fd);
    }
    for (int i = 0; i < 16; ++i) {
      const int fd = connect_to(port);
      if (fd < 0) continue;
      send_all(fd, "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
      slow_.push_back(fd);
    }
    trickle_ = std::thread([this] {
      while (!done_) {
        for (int fd : slow_) send_all(fd, "a");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~Abusers() {
    done_ = true;
    trickle_.join();
    for (int fd : fds_) ::close(fd);
    for (int fd : slow_) ::close(fd);
  }
  Abusers(const Abusers&) = delete;
  Abusers& operator=(const Abusers&) = delete;

 private:
  std::vector<int> fds_, slow_;
  std::atomic<bool> done_{false};
  std::thread trickle_;
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void BM_Filter(benchmark::State& state) {
  Fixture& f = fixture();
  static std::unique_ptr<Abusers> abusers;
  if (state.thread_index() == 0 && state.range(0) != 0) {
    abusers = std::make_unique<Abusers>(f.served.server->port());
  }
  httplib::Client client("127.0.0.1", f.served.server->port());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // as Go's net/http client (kube-scheduler) does by default
  std::vector<double> micros;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = client.Post("/filter", f.body, "application/json");
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!r || r->status != 200) {
      state.SkipWithError("filter request failed");
      break;
    }
    benchmark::DoNotOptimize(r->body.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["p50_us"] =
      benchmark::Counter(percentile(micros, 0.5), benchmark::Counter::kAvgThreads);
  state.counters["p99_us"] =
      benchmark::Counter(percentile(micros, 0.99), benchmark::Counter::kAvgThreads);
  if (state.thread_index() == 0) abusers.reset();
}
BENCHMARK(BM_Filter)->ArgName("abusers")->Arg(0)->Arg(1)->Threads(1)->Threads(4)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
