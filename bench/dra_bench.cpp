// The DRA driver's NodePrepareResources for one claim, as the kubelet waits for it: read the claim
// from an API server (cpp-httplib on loopback, answering the claim's JSON), have a running
// tesserad grant the share over its socket (its grants file written and synced), write the CDI
// spec and the checkpoint (each synced). Each iteration prepares a fresh claim and then
// unprepares it, untimed, so the GPU's share is free again. Real time is the latency the pod's
// start waits; files are on the machine's temporary folder.

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tessera/daemon/control_server.hpp"
#include "tessera/dra/api_claim_source.hpp"
#include "tessera/dra/daemon_grants.hpp"
#include "tessera/dra/dra_driver.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using namespace tessera;
namespace fs = std::filesystem;

// A ResourceClaim allocated half of GPU 0 of node-a, with its configuration.
nlohmann::json claim(const std::string& uid) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "bench"}, {"namespace", "default"}, {"uid", uid}}},
          {"status",
           {{"allocation",
             {{"devices",
               {{"results",
                 {{{"request", "gpu"},
                   {"driver", "gpu.tessera.io"},
                   {"pool", "node-a"},
                   {"device", "gpu-0"},
                   {"consumedCapacity", {{"smPercent", "50"}, {"memory", "40Gi"}}}}}},
                {"config",
                 {{{"source", "FromClaim"},
                   {"requests", nlohmann::json::array()},
                   {"opaque",
                    {{"driver", "gpu.tessera.io"},
                     {"parameters",
                      {{"apiVersion", "gpu.tessera.io/v1alpha1"},
                       {"kind", "GpuShareConfig"},
                       {"class", "latency-critical"},
                       {"tpotSLO", "50ms"}}}}}}}}}}}}}}};
}

void BM_DraPrepare(benchmark::State& state) {
  const fs::path root = fs::temp_directory_path() / fmt::format("tessera-dra-bench-{}", getpid());
  fs::remove_all(root);
  fs::create_directories(root / "cdi");
  std::ofstream(root / "token") << "t\n";

  daemon::ServerOptions server_options;
  server_options.socket_path = (root / "tesserad.sock").string();
  server_options.grants_path = (root / "grants.json").string();
  auto server = daemon::ControlServer::start(
      server_options, daemon::TenantTable({*gpu::PartitionGrid::of(*hw::find_gpu("h100"))},
                                          *daemon::make_node_policy("priority-fill")));
  if (!server) {
    state.SkipWithError(server.error().message().c_str());
    return;
  }
  std::atomic<bool> stop{false};
  std::thread daemon_thread([&] { (void)(*server)->run([&] { return stop.load(); }); });

  std::atomic<int> next{0};
  httplib::Server api;
  api.Get(".*", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(claim(fmt::format("uid-{}", next.load())).dump(), "application/json");
  });
  const int port = api.bind_to_any_port("127.0.0.1");
  std::thread api_thread([&] { api.listen_after_bind(); });
  while (!api.is_running()) std::this_thread::yield();

  auto client = k8s::ApiServerClient::create({.url = fmt::format("http://127.0.0.1:{}", port),
                                              .token_file = (root / "token").string(),
                                              .ca_file = ""});
  dra::ApiClaimSource claims(std::move(*client));
  dra::DaemonGrants grants(server_options.socket_path);
  dra::DriverOptions options;
  options.node_name = "node-a";
  options.cdi_dir = (root / "cdi").string();
  options.checkpoint_path = (root / "checkpoint.json").string();
  auto driver = dra::DraDriver::open(options, claims, grants);
  for (auto _ : state) {
    const dra::ClaimRef ref{
        .ns = "default", .name = "bench", .uid = fmt::format("uid-{}", next.load())};
    auto prepared = (*driver)->prepare(ref);
    if (!prepared) {
      state.SkipWithError(prepared.error().message().c_str());
      break;
    }
    state.PauseTiming();
    (void)(*driver)->unprepare(ref);
    next.fetch_add(1);
    state.ResumeTiming();
  }
  api.stop();
  api_thread.join();
  stop = true;
  daemon_thread.join();
  fs::remove_all(root);
}
BENCHMARK(BM_DraPrepare)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
