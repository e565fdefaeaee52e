#pragma once
// The node agent's state (FlexTopo's in-cluster agent, arXiv 2411.11560 §3.2: periodic hardware
// checks plus event-driven allocation updates): the node's current topology graph and which pod
// holds which GPUs, core groups and NUMA memory, with a generation number that moves on every
// change. No HTTP and no wall clock here: discovery is an injected function (hw::discover_host in
// production, a fake in tests) and time an injected core::Clock, so all of it runs in a test.
// `tessera agent` serves it (agent_http.hpp) and pushes it to the extender (agent_push.hpp).
//
// Thread-safe: the HTTP handlers and the refresh loop call it from different threads.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"
#include "tessera/k8s/node_resource_topology.hpp"

namespace tessera::k8s {

using DiscoverFn = std::function<core::Result<hw::HostTopology>()>;

// What one pod holds on this node (indices into the topology's typed lists), as POST /allocations
// carries it:
//   {"pods": [{"name": "ns/pod", "gpus": [0, 1], "core_groups": [0, 1],
//              "memory": [{"numa": 0, "bytes": 68719476736}]}]}
// "gpus", "core_groups" and "memory" may be omitted (nothing of that kind), not all three.
struct PodAllocation {
  std::string name;
  cluster::Assignment assignment;
};
// Errors (kK8s, kParse) name the JSON path: "pods[2].gpus[0]: expected a non-negative integer".
core::Result<std::vector<PodAllocation>> parse_allocations(const nlohmann::json& body);
nlohmann::json allocations_json(const std::vector<PodAllocation>& pods);

// The kubelet's --reserved-cpus: a CPU list ("0-1,64-65", the syntax of k8s.io/utils/cpuset) as
// sorted CPU numbers; "" is none. Fails naming the part that is neither a CPU number nor a range.
core::Result<std::vector<int>> parse_cpu_list(std::string_view text);
// The kubelet's --reserved-memory values (the flag may repeat): "NUMA:memory=QUANTITY", several
// joined by ';', each with optional ",hugepages-SIZE=QUANTITY" (accepted, not counted: tessera
// hands out no hugepages). Returns the bytes of memory reserved per OS NUMA node number. Fails
// naming the entry that is malformed, a NUMA node given twice or an unknown memory type.
core::Result<std::map<int, std::int64_t>> parse_reserved_memory(
    const std::vector<std::string>& values);

struct AgentOptions {
  std::string node_name;  // the Kubernetes node's name (an object name: validate_object_name)
  core::Nanos refresh_period = 30 * core::kNanosPerSecond;
  NrtOptions nrt;
};

struct RefreshOutcome {
  bool changed = false;  // the rediscovered topology differs from the one held before
  // Pods whose holdings the new topology no longer has (a GPU gone, fewer core groups): dropped
  // from the allocation, since what they name no longer exists.
  std::vector<std::string> dropped_pods;
  std::uint64_t generation = 0;
};

struct AllocationOutcome {
  bool changed = false;  // the set differs from the one held before
  std::uint64_t generation = 0;
};

class NodeAgent {
 public:
  // Discovers once; fails when the options are invalid or the first discovery fails.
  static core::Result<std::unique_ptr<NodeAgent>> create(AgentOptions options, DiscoverFn discover,
                                                         const core::Clock& clock);
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  const AgentOptions& options() const { return options_; }

  // Rediscovers now. On failure the topology held stays (and the error says why); on success a
  // changed topology replaces it, keeps every pod whose holdings still exist, and bumps the
  // generation.
  core::Result<RefreshOutcome> refresh();
  // Whether the refresh period has passed since the last refresh attempt.
  bool refresh_due() const;
  // When the next refresh is due, on the injected clock.
  core::Nanos next_refresh_at() const;

  // Replaces the allocation with `pods` (the whole set on this node: posting it again is a no-op,
  // so a sender may retry). Fails without changing anything when a pod names a GPU, core group or
  // NUMA node the topology lacks, two pods hold the same one, or a name repeats.
  core::Result<AllocationOutcome> set_allocations(std::vector<PodAllocation> pods);

  // Moves on every change of topology or allocation; starts at 1.
  std::uint64_t generation() const;
  // Moves only when the topology changes (what the extender push carries); starts at 1.
  std::uint64_t topology_generation() const;
  std::shared_ptr<const hw::HostTopology> topology() const;
  std::vector<PodAllocation> allocations() const;

  // GET /topology: {"node", "generation", "topology": cluster::node_json (hw::to_json plus each
  // component's status and used_by)}.
  nlohmann::json topology_json() const;
  // GET /noderesourcetopology: the NRT object with what the allocation leaves available.
  core::Result<nlohmann::json> node_resource_topology() const;
  // GET /healthz: {"status": "ok", "node", "generation", "gpus", "last_refresh_error"?,
  // "seconds_since_refresh"}.
  nlohmann::json health() const;

 private:
  NodeAgent(AgentOptions options, DiscoverFn discover, const core::Clock& clock);
  // The state for `topology` with as many of `pods` as still fit; the others in `dropped`.
  static cluster::ClusterState rebuild(const std::string& node,
                                       std::shared_ptr<const hw::HostTopology> topology,
                                       std::vector<PodAllocation>& pods,
                                       std::vector<std::string>* dropped);

  const AgentOptions options_;
  const DiscoverFn discover_;
  const core::Clock& clock_;

  mutable std::mutex mu_;
  cluster::ClusterState state_;  // one node: this one
  std::shared_ptr<const hw::HostTopology> topology_;
  nlohmann::json topology_key_;      // hw::to_json(*topology_): what "changed" compares
  std::vector<PodAllocation> pods_;  // sorted by name
  std::uint64_t generation_ = 1;
  std::uint64_t topology_generation_ = 1;
  core::Nanos last_refresh_ = 0;
  std::string last_refresh_error_;
};

// Pushes a topology to the extender (agent_push.hpp's TopologyPusher in production).
using PushFn = std::function<core::Status(const std::string& node, const hw::HostTopology&)>;

// What one pass of the agent's loop did, for the log.
struct TickReport {
  bool refreshed = false;
  std::optional<RefreshOutcome> refresh;  // when refreshed and discovery worked
  std::optional<core::Error> refresh_error;
  bool pushed = false;                    // a push was attempted
  std::optional<core::Error> push_error;  // ... and failed
};

// The agent's loop without its sleeping: tick() refreshes when the period has passed, and pushes
// when the topology changed since the last successful push or the period has passed since the
// last attempt. A failed push is retried at the next period (or sooner if the topology changes),
// never fatal.
class AgentLoop {
 public:
  // `push` may be empty (no --push).
  AgentLoop(NodeAgent& agent, PushFn push, const core::Clock& clock);
  TickReport tick();
  // When tick() next has something to do.
  core::Nanos next_wake() const;

 private:
  NodeAgent& agent_;
  PushFn push_;
  const core::Clock& clock_;
  std::uint64_t pushed_generation_ = 0;  // topology generation of the last successful push
  std::uint64_t attempted_generation_ = 0;
  core::Nanos last_attempt_ = 0;
  bool attempted_ = false;
};

}  // namespace tessera::k8s
