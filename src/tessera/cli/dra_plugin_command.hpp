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
#include "tessera/dra/dra_driver.hpp"
#include "tessera/dra/dra_grpc.hpp"

namespace tessera::cli {

struct DraPluginFlags {
  CLI::App* command = nullptr;
  std::string node;
  // The driver's and the sockets' own defaults, so the flags cannot drift from them.
  std::string driver_name = dra::DriverOptions{}.driver_name;
  std::string registration_socket = dra::PluginSockets{}.registration;
  std::string plugin_socket = dra::PluginSockets{}.dra;
  std::string checkpoint = dra::DriverOptions{}.checkpoint_path;
  std::string cdi_dir = dra::DriverOptions{}.cdi_dir;
  std::string daemon_socket = dra::DriverOptions{}.daemon_socket;
  std::string interposer = dra::DriverOptions{}.interposer_host_path;
  std::string interposer_in_container = dra::DriverOptions{}.interposer_container_path;
  std::string mps_pipe_dir;
  std::string nvidia_cdi_kind = dra::DriverOptions{}.nvidia_cdi_kind;
  std::string topology_file;  // "": discover the host through hwloc
  std::string sysfs = "/sys";
  std::string refresh = "60s";
  bool once = false;  // print the node's ResourceSlice and exit
  ApiServerFlags api;
};

void add_dra_plugin_options(CLI::App& command, DraPluginFlags& flags);
Outcome run_dra_plugin_command(const DraPluginFlags& flags);

}  // namespace tessera::cli
