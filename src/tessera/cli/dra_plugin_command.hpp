#pragma once
// `tessera dra-plugin`: tessera's Kubernetes DRA driver on one node (docs/dra.md). It registers
// with the kubelet, prepares the ResourceClaims allocated from this node's GPUs by granting each
// claim's share in tesserad and writing its CDI spec, and unprepares them when their pods go.
// It publishes the node's GPUs as a ResourceSlice at start and checks it every --refresh period;
// --once prints that slice and exits.
// Stops cleanly on SIGINT or SIGTERM; prepared claims stay prepared (the checkpoint keeps them).

#include <CLI/CLI.hpp>
#include <string>

#include "tessera/cli/api_server_flags.hpp"
#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct DraPluginFlags {
  CLI::App* command = nullptr;
  std::string node;
  std::string driver_name = "gpu.tessera.io";
  std::string registration_socket = "/var/lib/kubelet/plugins_registry/gpu.tessera.io-reg.sock";
  std::string plugin_socket = "/var/lib/kubelet/plugins/gpu.tessera.io/dra.sock";
  std::string checkpoint = "/var/lib/kubelet/plugins/gpu.tessera.io/checkpoint.json";
  std::string cdi_dir = "/var/run/cdi";
  std::string daemon_socket = "/run/tessera/tesserad.sock";
  std::string interposer = "/opt/tessera/lib/libtessera_interpose.so";
  std::string interposer_in_container = "/opt/tessera/lib/libtessera_interpose.so";
  std::string mps_pipe_dir;
  std::string nvidia_cdi_kind = "nvidia.com/gpu";
  std::string topology_file;  // "": discover the host through hwloc
  std::string sysfs = "/sys";
  std::string refresh = "60s";
  bool once = false;  // print the node's ResourceSlice and exit
  ApiServerFlags api;
};

void add_dra_plugin_options(CLI::App& command, DraPluginFlags& flags);
Outcome run_dra_plugin_command(const DraPluginFlags& flags);

}  // namespace tessera::cli
