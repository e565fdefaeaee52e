#include "tessera/cli/agent_command.hpp"
#include "tessera/cli/calibrate_command.hpp"
#include "tessera/cli/cluster_sim_command.hpp"
#include "tessera/cli/command.hpp"
#include "tessera/cli/ctl_command.hpp"
#include "tessera/cli/daemon_command.hpp"
#include "tessera/cli/determinism_command.hpp"
#include "tessera/cli/dra_plugin_command.hpp"
#include "tessera/cli/experiment_command.hpp"
#include "tessera/cli/extender_command.hpp"
#include "tessera/cli/kernel_command.hpp"
#include "tessera/cli/list_command.hpp"
#include "tessera/cli/mig_command.hpp"
#include "tessera/cli/run_command.hpp"
#include "tessera/cli/topology_command.hpp"
#include "tessera/cli/validate_command.hpp"

namespace tessera::cli {

// The one table of commands: a new command is its file (flags, options, run) and one row here.
std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> out;
  out.push_back(command<RunFlags>("simulate", "Run a scenario file under its sharing modes",
                                  add_simulate_options, run_simulate_command));
  out.push_back(command<RunFlags>(
      "demo",
      "LLM inference with an SLO beside a training job on a simulated H100, under every "
      "sharing mode: the baselines, lithos, cogpu, tpot-first and priority-fill (the built-in "
      "examples/demo.yaml)",
      add_demo_options, run_demo_command));
  out.push_back(command<ExperimentFlags>(
      "experiment",
      "Run one of the papers' experiments (LithOS, CoGPU, MIGM, FlexTopo) side by "
      "side with the baselines, with the paper's figures next to tessera's",
      add_experiment_options, run_experiment_command));
  out.push_back(command<ListFlags>("list",
                                   "List built-in GPUs and models, the sharing modes, MIG schemes, "
                                   "preemption methods and experiments",
                                   add_list_options, run_list_command));
  out.push_back(command<MigFlags>(
      "mig",
      "The MIG level (MIGM): list a GPU's MIG layouts, plan a job file, or run it on a simulated "
      "or real MIG GPU",
      add_mig_options, run_mig_command));
  out.push_back(command<TopologyFlags>(
      "topology",
      "Show a server's topology graph (sockets, NUMA nodes, core groups, GPUs and their links): "
      "this machine through hwloc, a file (hwloc XML, NCCL topology XML or tessera's JSON) or a "
      "preset",
      add_topology_options, run_topology_command));
  out.push_back(command<AgentFlags>(
      "agent",
      "Node agent: discover this node's topology (sockets, NUMA nodes, core groups, GPUs), serve "
      "it over HTTP as JSON and as a NodeResourceTopology, refresh it periodically, and push it "
      "to the scheduler extender",
      add_agent_options, run_agent_command));
  out.push_back(command<ExtenderFlags>(
      "extender",
      "Serve kube-scheduler's extender verbs (filter, prioritize, preempt, bind) with tessera's "
      "topology-aware placement and preemption; node topologies come from `tessera agent`",
      add_extender_options, run_extender_command));
  out.push_back(command<DaemonFlags>(
      "daemon",
      "tesserad, the node daemon: processes under libtessera_interpose.so register on its Unix "
      "socket, and its policy (priority-fill by default) sets where and at what stream priority "
      "each one launches as their activity changes",
      add_daemon_options, run_daemon_command));
  out.push_back(command<CtlFlags>(
      "ctl",
      "Talk to a running `tessera daemon`: list tenants, set a tenant's class, priority or SLOs, "
      "switch the policy, drain",
      add_ctl_options, run_ctl_command));
  out.push_back(command<DraPluginFlags>(
      "dra-plugin",
      "Kubernetes DRA driver (gpu.tessera.io): prepare the GPU shares pods claim by granting "
      "each one in tesserad and injecting the interposer with CDI",
      add_dra_plugin_options, run_dra_plugin_command));
  out.push_back(command<ClusterSimFlags>(
      "cluster-sim",
      "Simulate a GPU cluster (FlexTopo): services that autoscale, batch jobs and trace pods, "
      "placed and preempted by the cluster level; prints preemptions, topology-affinity hit rate, "
      "victims, evicted GPU-hours, pending times and utilisation",
      add_cluster_sim_options, run_cluster_sim_command));
  out.push_back(command<CalibrateFlags>(
      "calibrate",
      "Time the decode and prefill kernels of a catalog model (and a training GEMM and "
      "optimizer kernel) on a GPU and on the simulated GPU with the same spec; report each "
      "kernel's relative error and the median and P90 of its absolute value. On a real GPU each "
      "kernel runs as tessera's emulation kernel (its FLOPs and DRAM bytes), not as cuBLAS",
      add_calibrate_options, run_calibrate_command));
  out.push_back(command<ValidateFlags>(
      "validate",
      "Compare the simulated GPU with measured kernel, layer, step and collective times: the "
      "public profiles under the data directory (perf_profiles/) or your own CSV files; per "
      "category the median and P90 of |error| and the worst rows",
      add_validate_options, run_validate_command));
  out.push_back(command<KernelFlags>(
      "kernel",
      "One GEMM, attention or copy on a simulated GPU: its kernels, launch shapes and simulated "
      "times, to compare with a single measurement",
      add_kernel_options, run_kernel_command));
  out.push_back(command<DeterminismFlags>(
      "determinism",
      "Does co-location change a decode's tokens? A decode model alone, then beside a training "
      "job under every sharing mode, compared bit for bit (CoGPU's determinism claim)",
      add_determinism_options, run_determinism_command));
  return out;
}

}  // namespace tessera::cli
