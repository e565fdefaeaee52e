#pragma once
// `tessera cluster-sim SCENARIO.yaml`: the cluster simulator
// (src/tessera/backends/sim/cluster/sim_cluster.hpp) on a scenario file, with the preemption
// method, alpha, seed and duration overridable from the command line, and the scenario scalable to
// another node count (--nodes). Prints the summary table; --json writes the summary, every
// preemption and utilisation over time.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "tessera/cli/command.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {

struct ClusterSimFlags {
  CLI::App* command = nullptr;
  std::string scenario_path;
  std::string method;  // empty: the scenario's
  std::optional<double> alpha;
  std::optional<std::uint64_t> seed;
  std::string duration;      // empty: the scenario's
  std::optional<int> nodes;  // scale the scenario to this many nodes
  std::string numa_memory;   // bytes or a quantity, for topology files that give none
  std::string json_path;
  bool quiet = false;
};

// Adds `cluster-sim` to `app`; `flags` receives its values and must outlive parsing.
void add_cluster_sim_options(CLI::App& command, ClusterSimFlags& flags);
// Runs it (when `*flags.command` is set).
Outcome run_cluster_sim_command(const ClusterSimFlags& flags);

}  // namespace tessera::cli
