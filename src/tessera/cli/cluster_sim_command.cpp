#include "tessera/cli/cluster_sim_command.hpp"

#include <fmt/format.h>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cli {

void add_cluster_sim_command(CLI::App& app, ClusterSimFlags& flags) {
  flags.command = app.add_subcommand(
      "cluster-sim",
      "Simulate a GPU cluster (FlexTopo): services that autoscale, batch jobs and trace pods, "
      "placed and preempted by the cluster level; prints preemptions, topology-affinity hit rate, "
      "victims, evicted GPU-hours, pending times and utilisation");
  auto* c = flags.command;
  c->add_option("SCENARIO", flags.scenario_path, "Cluster scenario YAML (examples/cluster/)")
      ->required();
  c->add_option("--method", flags.method,
                "Preemption method: incremental, exhaustive or default-k8s (default: the "
                "scenario's)");
  c->add_option("--alpha", flags.alpha, "Weight of the priority term in S(C), in [0, 1]");
  c->add_option("--seed", flags.seed, "Override the scenario's seed");
  c->add_option("--duration", flags.duration, "Override the simulated duration, e.g. 6h");
  c->add_option("--json", flags.json_path, "Write the results as JSON to this file ('-': stdout)");
  c->add_flag("-q,--quiet", flags.quiet, "No progress line");
}

core::Status run_cluster_sim_command(const ClusterSimFlags& flags) {
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
  if (!flags.duration.empty()) {
    TESSERA_ASSIGN_OR_RETURN(sc.duration, core::parse_duration(flags.duration));
    if (sc.duration <= 0) {
      return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                         "--duration {}: need a positive duration", flags.duration);
    }
  }
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
