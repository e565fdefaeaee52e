#include "tessera/cli/cluster_sim_command.hpp"

#include <fmt/format.h>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/cli/duration_flag.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"
#include "tessera/k8s/node_resource_topology.hpp"

namespace tessera::cli {

void add_cluster_sim_options(CLI::App& command, ClusterSimFlags& flags) {
  CLI::App* c = &command;
  c->add_option("SCENARIO", flags.scenario_path, "Cluster scenario YAML (examples/cluster/)")
      ->required();
  c->add_option("--method", flags.method,
                fmt::format("Preemption method: {} (`tessera list`); default: the scenario's",
                            cluster::preemption_method_names()));
  c->add_option("--alpha", flags.alpha, "Weight of the priority term in S(C), in [0, 1]");
  c->add_option("--seed", flags.seed, "Override the scenario's seed");
  add_duration_option(*c, flags.duration, "Override the simulated duration, e.g. 6h");
  c->add_option("--nodes", flags.nodes,
                "Scale the scenario to this many nodes: its node pools, services and batch "
                "arrivals in proportion (not for a trace or a node list)");
  c->add_option("--numa-memory", flags.numa_memory,
                "Memory of each NUMA node a pool's topology_file gives no size for (NCCL XML), in "
                "bytes or as a quantity (64Gi), for pools without numa_memory_gib; without either "
                "such memory is not counted");
  c->add_option("--json", flags.json_path, "Write the results as JSON to this file ('-': stdout)");
  c->add_flag("-q,--quiet", flags.quiet, "No progress line");
}

Outcome run_cluster_sim_command(const ClusterSimFlags& flags) {
  TESSERA_ASSIGN_OR_RETURN(sim::ClusterScenario sc,
                           sim::load_cluster_scenario(flags.scenario_path));
  if (!flags.method.empty()) {
    TESSERA_ASSIGN_OR_RETURN(sc.method, cluster::parse_preemption_method(flags.method));
  }
  if (flags.alpha) {
    if (!(*flags.alpha >= 0 && *flags.alpha <= 1)) {
      return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                         "--alpha {}: need a value in [0, 1]", *flags.alpha);
    }
    sc.preemption.alpha = *flags.alpha;
  }
  if (flags.seed) sc.seed = *flags.seed;
  if (!flags.numa_memory.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t bytes,
                             k8s::parse_bytes(flags.numa_memory, "--numa-memory"));
    for (sim::NodePool& pool : sc.nodes) {
      if (!pool.topology_file.empty() && !pool.numa_memory_bytes) pool.numa_memory_bytes = bytes;
    }
  }
  if (flags.nodes) {
    TESSERA_ASSIGN_OR_RETURN(sc, sim::scale_to_nodes(sc, *flags.nodes));
  }
  TESSERA_ASSIGN_OR_RETURN(const auto duration, parse_duration_flag(flags.duration));
  if (duration) sc.duration = *duration;
  ProgressLine progress(!flags.quiet);
  sim::ClusterSimOptions opts;
  opts.progress = [&progress](core::Nanos now, core::Nanos end) {
    progress.update("cluster-sim", now / core::kNanosPerSecond, end / core::kNanosPerSecond, now);
  };
  TESSERA_ASSIGN_OR_RETURN(const sim::ClusterSimResult result, sim::run_cluster_sim(sc, opts));
  progress.finish();
  fmt::print("{}", sim::summary_table(result));
  if (!flags.json_path.empty()) {
    TESSERA_TRY(write_text(flags.json_path, sim::to_json(result).dump(2)));
  }
  return {};
}

}  // namespace tessera::cli
