#pragma once
// One server's topology with who holds what: FlexTopo's per-component "status" and "used-by"
// attributes (arXiv 2411.11560, §3.2). GPUs and core groups are held whole by one pod; a NUMA
// node's memory is shared out in bytes, up to its allocatable memory (local memory less the
// kubelet's reservation), or without limit when its size is unknown.

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tessera/cluster/state/pod.hpp"
#include "tessera/core/error.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::cluster {

// Where a pod's resources are on its node (indices into the topology's typed lists).
struct Assignment {
  std::vector<int> gpus;
  std::vector<int> core_groups;
  struct Memory {
    int numa = 0;
    std::int64_t bytes = 0;
  };
  std::vector<Memory> memory;
  Affinity affinity = Affinity::kSameNuma;  // what the three together achieve
};

// The free memory of a NUMA node whose size is unknown (an NCCL topology names none): no request
// is refused for memory there. Sums saturate at it (NumaFree::operator+=), so a domain holding
// such a node stays unlimited, and taking from it leaves it so.
inline constexpr std::int64_t kUnlimitedMemory = std::numeric_limits<std::int64_t>::max();

// Free resources of one NUMA node: what feasibility checks count with.
struct NumaFree {
  int gpus = 0;
  int core_groups = 0;
  std::int64_t memory_bytes = 0;  // kUnlimitedMemory: the size is unknown
  // Physical cores in the free core groups: what a CPU request is checked against (groups may
  // differ in size, so their count alone does not say whether a request fits).
  int cores = 0;

  // Adds `other` (a domain of several NUMA nodes), memory saturating at kUnlimitedMemory. Inline:
  // preemption searches add holdings back this way for every victim set they try.
  NumaFree& operator+=(const NumaFree& other) {
    gpus += other.gpus;
    core_groups += other.core_groups;
    cores += other.cores;
    if (__builtin_add_overflow(memory_bytes, other.memory_bytes, &memory_bytes)) {
      memory_bytes = kUnlimitedMemory;
    }
    return *this;
  }
};

// What each NUMA node of `topology` offers pods when nothing is held: its GPUs, its core groups
// and their cores, and its allocatable memory (kUnlimitedMemory when its size is unknown).
std::vector<NumaFree> capacity_per_numa(const hw::HostTopology& topology);

// What one pod holds on one NUMA node of its node, in the units NumaFree counts, and the pod's
// priority: a preemption search compares it for every holding of every node, and reading it here
// saves a lookup in the pod table that misses the cache on a large cluster.
struct Holding {
  int pod = -1;
  int numa = 0;
  NumaFree amount;
  std::int32_t priority = 0;
};

// A line of its own: a preemption search reads the first three members of every node, and they
// fill exactly one cache line.
class alignas(64) NodeState {
 public:
  NodeState(std::string name, std::shared_ptr<const hw::HostTopology> topology);

  const std::string& name() const { return name_; }
  const hw::HostTopology& topology() const { return *topology_; }
  const std::shared_ptr<const hw::HostTopology>& topology_ptr() const { return topology_; }

  // The pods bound here (indices into ClusterState's pod table), in bind order.
  const std::vector<int>& pods() const { return pods_; }
  // Who holds each GPU / core group (a pod index), or -1 when free.
  const std::vector<int>& gpu_owner() const { return gpu_owner_; }
  const std::vector<int>& core_group_owner() const { return core_group_owner_; }
  const std::vector<std::int64_t>& numa_memory_used() const { return numa_memory_used_; }

  // Free per NUMA node now (kept up to date by take/release, so reading it allocates nothing).
  const std::vector<NumaFree>& free_per_numa() const { return free_; }
  // What each pod holds per NUMA node, one entry per (pod, NUMA node), a pod's entries together,
  // pods in take order: what a preemption search gives back without walking the assignments.
  const std::vector<Holding>& holdings() const { return holdings_; }

  // Takes the resources of `a` for pod `pod` of priority `priority`; fails (kCluster,
  // kFailedPrecondition) without changing anything when any of them is already held, listed twice,
  // out of range, or more memory than the NUMA node has free (or than 2^63 bytes in all, where its
  // size is unknown).
  core::Status take(int pod, std::int32_t priority, const Assignment& a);
  // Returns everything pod `pod` holds here.
  void release(int pod, const Assignment& a);

 private:
  std::shared_ptr<const hw::HostTopology> topology_;
  std::vector<NumaFree> free_;
  std::vector<Holding> holdings_;
  std::string name_;
  std::vector<int> pods_;
  std::vector<int> gpu_owner_;
  std::vector<int> core_group_owner_;
  std::vector<std::int64_t> numa_memory_used_;
};

// The affinity an assignment achieves on `topology`: the widest spread of its GPUs, core groups
// and memory together (one NUMA node, one socket, or more). Indices out of range count as
// cross-socket.
Affinity affinity_of(const hw::HostTopology& topology, const Assignment& a);

}  // namespace tessera::cluster
