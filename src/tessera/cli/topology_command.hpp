#pragma once
// `tessera topology [FILE] [--preset NAME]`: a server's topology graph (FlexTopo's sockets, NUMA
// nodes, core groups and GPUs with their links) as a readable tree or as tessera's JSON. No
// argument: this machine, through hwloc. FILE: an hwloc XML export, an NCCL topology XML or
// tessera's topology JSON, told apart by content.

#include <CLI/CLI.hpp>
#include <string>

#include "tessera/cli/command.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {

struct TopologyFlags {
  CLI::App* command = nullptr;
  std::string file;
  std::string preset;
  std::string hostname;  // a preset's hostname (default: the preset's name)
  bool json = false;
  int cores_per_group = 4;
  int numa_per_socket = 0;  // NCCL files: NUMA nodes per socket
  std::string numa_memory;  // bytes or a quantity for NUMA nodes of unknown memory
};

// Adds `topology` to `app`; `flags` receives its values and must outlive parsing.
void add_topology_options(CLI::App& command, TopologyFlags& flags);
// Runs it (when `*flags.command` is set).
Outcome run_topology_command(const TopologyFlags& flags);

}  // namespace tessera::cli
