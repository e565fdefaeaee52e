#pragma once
// `tessera daemon`: tesserad, the node daemon. It listens on a Unix socket (--socket), where
// processes under libtessera_interpose.so register (TESSERA_DAEMON_SOCKET) and `tessera ctl`
// sends its requests, and runs a remap policy over the registered tenants of each GPU every
// --tick, writing each tenant's SM partition to the page it shares with the tenant's interposer.
// --metrics serves Prometheus metrics. Stops cleanly on SIGINT or SIGTERM.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

// Where the daemon listens and ctl connects: $TESSERA_DAEMON_SOCKET, else this.
inline constexpr const char* kDefaultDaemonSocket = "/run/tessera/tesserad.sock";
std::string default_daemon_socket();

struct DaemonFlags {
  CLI::App* command = nullptr;
  std::string config;  // a YAML file of the options below; flags given override it
  std::string socket = default_daemon_socket();
  std::string gpu;  // "": discovered through NVML
  int devices = 0;  // 0: 1 with --gpu, else every GPU NVML reports
  std::string policy = "priority-fill";
  double best_effort_share = 0.05;  // priority-fill's reserve
  bool slo_guided = false;          // and whether it follows the served tenants' steps
  std::string mechanism = "auto";
  std::string tick = "1ms";
  std::string idle_after = "20ms";
  std::string min_residency = "2ms";
  std::string metrics;  // HOST:PORT of the Prometheus endpoint; "": none
  // Where `ctl set` changes are kept across restarts: "" beside the socket, "none": not kept.
  std::string settings_file;
  // Where grants are kept until revoked: "" beside the settings file, "none": not kept.
  std::string grants_file;
  bool mps = false;
  std::string mps_pipe_dir;  // "": mps/ beside the socket
  std::string mps_control = "nvidia-cuda-mps-control";
  // Who may register as latency-critical (or with a priority above 0); empty: every process.
  std::vector<std::int64_t> latency_critical_uids;
};

void add_daemon_options(CLI::App& command, DaemonFlags& flags);
Outcome run_daemon_command(const DaemonFlags& flags);

}  // namespace tessera::cli
