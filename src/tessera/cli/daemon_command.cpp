#include "tessera/cli/daemon_command.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "tessera/cli/stop_signals.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/daemon/control_server.hpp"
#include "tessera/daemon/daemon_metrics.hpp"
#include "tessera/daemon/tenant_table.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::cli {

std::string default_daemon_socket() {
  const char* env = std::getenv("TESSERA_DAEMON_SOCKET");
  return env != nullptr && *env != '\0' ? env : kDefaultDaemonSocket;
}

void add_daemon_options(CLI::App& command, DaemonFlags& f) {
  CLI::App* c = &command;
  c->add_option("--socket", f.socket,
                "Unix socket to listen on (default: $TESSERA_DAEMON_SOCKET, else "
                "/run/tessera/tesserad.sock)")
      ->capture_default_str();
  c->add_option("--gpu", f.gpu,
                "The node's GPU model, a catalog name or alias (h100, a100-80gb, ...; `tessera "
                "list`): its SM count and green-context granularity")
      ->required();
  c->add_option("--devices", f.devices, "How many such GPUs the daemon owns (ordinals 0..N-1)")
      ->capture_default_str();
  c->add_option("--policy", f.policy,
                "Remap policy: " + daemon::remap_policy_names() +
                    " (`tessera ctl policy` "
                    "switches it while running)")
      ->capture_default_str();
  c->add_option("--mechanism", f.mechanism,
                "green-contexts (each process in an SM range the policy sizes; needs MPS for two "
                "processes at once) or gate (best-effort launches held while a latency-critical "
                "process has work; works on every driver)")
      ->capture_default_str();
  c->add_option("--tick", f.tick, "Time between policy rounds")->capture_default_str();
  c->add_option("--idle-after", f.idle_after,
                "A tenant that has not launched for this long has no work")
      ->capture_default_str();
  c->add_option("--metrics", f.metrics,
                "Serve Prometheus metrics on HOST:PORT (/metrics), e.g. 0.0.0.0:9402; port 0 "
                "picks a free one");
  c->add_option("--min-residency", f.min_residency,
                "A latency-critical tenant's partition is not shrunk sooner than this after it "
                "changed")
      ->capture_default_str();
}

Outcome run_daemon_command(const DaemonFlags& f) {
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec,
                           core::with_context(hw::find_gpu(f.gpu), "--gpu"));
  TESSERA_ASSIGN_OR_RETURN(const gpu::PartitionGrid grid,
                           core::with_context(gpu::PartitionGrid::of(spec), "--gpu"));
  // ASSUMPTION: no node has more than 64 GPUs (the control protocol's device range).
  if (f.devices < 1 || f.devices > 64) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--devices {}: must be 1-64", f.devices);
  }
  daemon::TableOptions table;
  TESSERA_ASSIGN_OR_RETURN(table.mechanism,
                           core::with_context(daemon::mechanism_named(f.mechanism), "--mechanism"));
  TESSERA_ASSIGN_OR_RETURN(table.idle_after,
                           core::with_context(core::parse_duration(f.idle_after), "--idle-after"));
  TESSERA_ASSIGN_OR_RETURN(
      table.min_residency,
      core::with_context(core::parse_duration(f.min_residency), "--min-residency"));
  daemon::ServerOptions server;
  server.socket_path = f.socket;
  TESSERA_ASSIGN_OR_RETURN(server.tick, core::with_context(core::parse_duration(f.tick), "--tick"));
  if (server.tick <= 0 || table.idle_after <= 0 || table.min_residency < 0) {
    return core::fail(core::Domain::kConfig, core::Code::kInvalidArgument,
                      "--tick and --idle-after must be positive, --min-residency not negative");
  }
  TESSERA_ASSIGN_OR_RETURN(auto policy,
                           core::with_context(daemon::make_remap_policy(f.policy), "--policy"));
  StopSignals signals;
  std::unique_ptr<daemon::DaemonMetrics> metrics;
  if (!f.metrics.empty()) {
    TESSERA_ASSIGN_OR_RETURN(metrics, daemon::DaemonMetrics::serve(f.metrics));
    server.after_round = [m = metrics.get()](const daemon::TenantTable& t, core::Nanos now) {
      m->observe(t, now);
    };
    for (int port : metrics->ports()) {
      fmt::print(stderr, "tessera daemon: metrics on http://{}:{}/metrics\n",
                 f.metrics.substr(0, f.metrics.rfind(':')), port);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(
      auto daemon, daemon::ControlServer::start(
                       server, daemon::TenantTable(std::vector<gpu::PartitionGrid>(
                                                       static_cast<std::size_t>(f.devices), grid),
                                                   std::move(policy), table)));
  fmt::print(stderr, "tessera daemon: listening on {}; {} x {} ({} SMs), {}, policy {}\n", f.socket,
             f.devices, spec.name, grid.device_sms, f.mechanism, f.policy);
  int signal = 0;
  TESSERA_TRY(daemon->run([&] {
    signal = signals.take_pending();
    return signal != 0;
  }));
  fmt::print(stderr, "tessera daemon: {}, stopping\n", StopSignals::name(signal));
  return core::Status{};
}

}  // namespace tessera::cli
