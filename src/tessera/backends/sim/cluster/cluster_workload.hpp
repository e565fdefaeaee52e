#pragma once
// What runs on the simulated cluster (FlexTopo, arXiv 2411.11560, §5: three co-located workload
// kinds on a saturated cluster): online LLM services whose replica count follows a diurnal
// traffic curve through an autoscaler (the paper's workload A), other services (B: the same shape
// with a flat curve), batch and training jobs that arrive to fill the valleys (C), and pods
// replayed from the Alibaba GPU cluster trace (openb). A scenario file (`tessera cluster-sim
// FILE.yaml`) describes one; parse_cluster_scenario reads it with file:line errors.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/cluster/policy/preemption.hpp"
#include "tessera/cluster/state/pod.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::sim {

// One kind of pod: what it asks for and how it ranks. `weight` is its share when a mix draws
// among several classes.
struct PodClass {
  std::string name;
  double weight = 1.0;
  std::int32_t priority = 0;
  cluster::Qos qos = cluster::Qos::kBestEffort;
  cluster::TopologyRequirement topology = cluster::TopologyRequirement::kNone;
  cluster::Resources request;
};

// Nodes of one shape: `count` servers from a hw preset (topology_presets.hpp) or from a topology
// file (hwloc XML, NCCL XML or tessera JSON; topology_sources.hpp). Or the servers of the openb
// node list, each as its row says (load_openb_nodes).
struct NodePool {
  std::string name_prefix = "node";  // nodes are named prefix-0, prefix-1, ...
  int count = 1;
  std::string preset;         // e.g. "rtx4090-2s2n"; empty when another source is given
  std::string topology_file;  // resolved against the scenario file's folder
  // Likewise. Its rows name the nodes; `count` takes the first rows (0: all of them).
  std::string openb_node_csv;
  // The memory of each NUMA node a topology file gives no size for (an NCCL topology); unset:
  // unknown, and then not counted by placement.
  std::optional<std::int64_t> numa_memory_bytes;
};

// A service (workloads A and B). Offered load follows
//   load(t) = mean_load * (1 + amplitude * cos(2 pi (t - peak_at) / period)) * (1 + noise * z)
// with z standard normal drawn at each autoscaler tick (stream "load/<name>"); the autoscaler sets
// replicas = clamp(ceil(load / target_load_per_replica), min_replicas, max_replicas). A flat
// service (workload B) has amplitude 0 and noise 0. Scale-down retires the newest replicas.
struct ServiceSpec {
  PodClass replica;
  int min_replicas = 1;
  int max_replicas = 1;
  double mean_load = 1.0;  // requests per second, day average
  double amplitude = 0.0;  // peak = mean * (1 + amplitude); in [0, 1)
  core::Nanos period = 24 * 3600 * core::kNanosPerSecond;
  core::Nanos peak_at = 14 * 3600 * core::kNanosPerSecond;
  double noise = 0.0;  // relative standard deviation of the load at each tick
  double target_load_per_replica = 1.0;
  core::Nanos autoscale_interval = 300 * core::kNanosPerSecond;
};

// Where batch job durations come from.
enum class DurationSource : std::uint8_t {
  kExponential,  // mean `mean_duration`
  kPhilly,       // drawn from the Philly runtime distribution (philly_runtime.csv), seconds
};

// Batch / training jobs (workload C): Poisson arrivals, a shape drawn from `shapes` by weight, a
// run time from `durations`. An evicted job is requeued (it restarts from zero: the GPU time it
// had is lost) or dropped, by `requeue_evicted`.
struct BatchSpec {
  std::string name;
  std::vector<PodClass> shapes;
  double arrivals_per_hour = 0.0;
  DurationSource durations = DurationSource::kExponential;
  core::Nanos mean_duration = 3600 * core::kNanosPerSecond;
  std::string philly_runtime_csv;  // kPhilly: path (resolved against the scenario's folder)
  core::Nanos min_duration = 60 * core::kNanosPerSecond;  // clamp of drawn durations
  core::Nanos max_duration = 7 * 24 * 3600 * core::kNanosPerSecond;
  bool requeue_evicted = true;
};

// Pods replayed from the Alibaba openb pod list (creation and deletion times, cpu_milli,
// memory_mib, num_gpu, gpu_milli, qos). How qos maps and what happens to fractional GPUs is in
// cluster_workload.cpp and docs/cluster.md.
struct TraceSpec {
  std::string openb_pod_csv;  // resolved against the scenario's folder
  // Trace second that maps to simulated time 0: pods created earlier and deleted later are there
  // from the start with what is left of their lifetime; pods deleted before it are skipped.
  double start_s = 0.0;
  double time_scale = 1.0;     // simulated seconds per trace second
  std::int64_t max_pods = -1;  // first N rows with a GPU; -1: all
  bool requeue_evicted = true;
};

struct ClusterScenario {
  std::string name;
  std::string base_dir;  // where relative paths resolve
  std::uint64_t seed = 1;
  core::Nanos duration = 24 * 3600 * core::kNanosPerSecond;
  core::Nanos sample_interval = 600 * core::kNanosPerSecond;  // utilisation samples
  std::vector<NodePool> nodes;
  std::vector<ServiceSpec> services;
  std::vector<BatchSpec> batches;
  std::optional<TraceSpec> trace;
  cluster::PreemptionMethod method = cluster::PreemptionMethod::kIncremental;
  cluster::PreemptionConfig preemption;
};

// Reads a scenario (YAML or JSON); errors name file, line and field.
core::Result<ClusterScenario> parse_cluster_scenario(const core::ConfigNode& root);
core::Result<ClusterScenario> load_cluster_scenario(const std::string& file);

// The same scenario on `nodes` nodes (scenario_scaling.cpp): the node pools and what runs (each
// service's replica bounds and load, each batch's arrival rate) scaled by `nodes` over its node
// count, so the cluster is as full as before. Fails for a trace (its pods are what they are) or
// a node list, and for `nodes` outside [1, 100000].
core::Result<ClusterScenario> scale_to_nodes(const ClusterScenario& scenario, int nodes);

// The Philly runtime distribution: job run times in seconds, as listed.
core::Result<std::vector<double>> load_philly_runtimes(const std::string& csv_path);

// One pod of the openb trace, mapped to the cluster level.
struct TracePod {
  cluster::Pod pod;
  core::Nanos created = 0;
  core::Nanos lifetime = 0;  // deletion - creation
};
core::Result<std::vector<TracePod>> load_openb_pods(const TraceSpec& spec);

// One server of the openb node list (openb_node_list_all_node.csv: sn, cpu_milli, memory_mib,
// gpu, model), as a generated topology; servers of one shape share it. The mapping is in
// cluster_workload.cpp and docs/cluster.md.
struct TraceNode {
  std::string name;  // the row's `sn`
  std::shared_ptr<const hw::HostTopology> topology;
};
core::Result<std::vector<TraceNode>> load_openb_nodes(const std::string& csv_path);

}  // namespace tessera::sim
