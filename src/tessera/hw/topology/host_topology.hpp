#pragma once
// The hardware topology of one server as FlexTopo (arXiv 2411.11560, §3.2) draws it: a graph whose
// vertices are the machine, its CPU sockets, NUMA nodes, CPU core groups and GPUs, and whose edges
// say how they hang together:
//   host       machine -> socket
//   contain    socket -> NUMA node, NUMA node -> core group
//   localized  GPU -> the NUMA node it is attached to (its PCIe root's locality)
//   nearby     between two GPUs that talk without crossing the host (same PCIe switch, NVLink or
//              NVSwitch), or two NUMA nodes of one socket; `via` names the link
// Like the paper, PCIe switches and NVSwitches are not vertices; unlike it, they are kept as the
// `via` of nearby edges so a placer can still tell an NVLink pair from two GPUs on one socket.
//
// This is the static part: what the server has. Which pod holds what is the cluster level's
// (cluster::NodeState). Built by HostTopologyBuilder from the live machine (topology_hwloc.hpp),
// hwloc XML, NCCL topology XML (topology_nccl.hpp), tessera's JSON (topology_json.hpp) or a
// generated preset (topology_presets.hpp).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::hw {

enum class TopoKind : std::uint8_t { kMachine, kSocket, kNuma, kCoreGroup, kGpu };
enum class TopoEdgeKind : std::uint8_t { kHost, kContain, kLocalized, kNearby };
std::string_view to_string(TopoKind k);      // "machine", "socket", "numa", "core-group", "gpu"
std::string_view to_string(TopoEdgeKind k);  // "host", "contain", "localized", "nearby"

// One vertex. Indices (`socket`, `numa`) are positions in HostTopology's typed lists, not OS
// numbers; `os_index` is the OS's (socket/package id, NUMA node id, first PU, CUDA-order GPU).
struct TopoNode {
  TopoKind kind = TopoKind::kMachine;
  std::string name;  // unique in the host: "machine", "socket0", "numa1", "cores1.0", "gpu3"
  int os_index = -1;
  int socket = -1;  // the socket it is in (a socket: itself; the machine: -1)
  int numa = -1;    // the NUMA node it is in or attached to (socket, machine: -1)
  // Core group: its physical cores and their OS PU numbers (all hardware threads).
  int cores = 0;
  std::vector<int> cpus;
  // NUMA node only. Its local memory: nullopt when the source does not say (NCCL XML carries no
  // sizes), which is unknown, not none. The kubelet's reservations (its --reserved-cpus and
  // --reserved-memory): the reserved CPUs, with every other hardware thread of their cores (no
  // core group holds any of them, since core groups are allocated whole), and reserved memory.
  std::optional<std::int64_t> local_memory_bytes;
  std::vector<int> reserved_cpus;
  std::int64_t reserved_memory_bytes = 0;
  // GPU only. Device memory (0 when the source does not say).
  std::int64_t memory_bytes = 0;
  std::string model;       // "NVIDIA GeForce RTX 4090", "Tesla V100-SXM3-32GB-H"; may be empty
  std::string pci_bus_id;  // "0000:34:00.0"; may be empty
  std::string uuid;        // "GPU-…"; may be empty

  bool operator==(const TopoNode&) const = default;
};

struct TopoEdge {
  TopoEdgeKind kind = TopoEdgeKind::kContain;
  int from = 0;     // node id (index into nodes())
  int to = 0;       // node id; for nearby edges the pair is unordered, stored with from < to
  std::string via;  // nearby only: "nvlink", "nvswitch", "pcie-switch", "same-socket"

  bool operator==(const TopoEdge&) const = default;
};

class HostTopology {
 public:
  const std::string& hostname() const { return hostname_; }
  // Where it came from: "hwloc:live", "hwloc-xml:PATH", "nccl-xml:PATH", "json:PATH",
  // "preset:rtx4090-2s".
  const std::string& source() const { return source_; }

  // All vertices; node 0 is the machine. Ids are positions in this vector.
  const std::vector<TopoNode>& nodes() const { return nodes_; }
  const std::vector<TopoEdge>& edges() const { return edges_; }
  const TopoNode& node(int id) const { return nodes_[static_cast<std::size_t>(id)]; }

  // Node ids of each kind in order: sockets()[i] is socket i, numa_nodes()[j] is NUMA node j,
  // and so on; TopoNode::socket / ::numa index these lists.
  std::span<const int> sockets() const { return sockets_; }
  std::span<const int> numa_nodes() const { return numa_; }
  std::span<const int> core_groups() const { return core_groups_; }
  std::span<const int> gpus() const { return gpus_; }

  // By index into the typed lists.
  const TopoNode& socket(int i) const { return node(sockets_[static_cast<std::size_t>(i)]); }
  const TopoNode& numa(int i) const { return node(numa_[static_cast<std::size_t>(i)]); }
  const TopoNode& core_group(int i) const {
    return node(core_groups_[static_cast<std::size_t>(i)]);
  }
  const TopoNode& gpu(int i) const { return node(gpus_[static_cast<std::size_t>(i)]); }

  // Per NUMA node (index j): the indices of its GPUs and core groups, and its socket.
  std::span<const int> gpus_of_numa(int j) const { return numa_gpus_[static_cast<std::size_t>(j)]; }
  std::span<const int> core_groups_of_numa(int j) const {
    return numa_core_groups_[static_cast<std::size_t>(j)];
  }
  // Per socket (index i): its NUMA nodes' indices.
  std::span<const int> numa_of_socket(int i) const {
    return socket_numa_[static_cast<std::size_t>(i)];
  }

  int total_cores() const;
  // The NUMA nodes' memory together; nullopt when one of them has none known.
  std::optional<std::int64_t> total_memory_bytes() const;

  // Relative distances between NUMA nodes as the firmware reports them (hwloc's NUMALatency: the
  // ACPI SLIT, 10 to itself): row i, column j at [i * n + j] for n NUMA nodes, in the order of
  // numa_nodes(); empty when the source gives none.
  const std::vector<std::int64_t>& numa_distances() const { return numa_distances_; }

  // Gives each NUMA node whose memory is unknown `bytes` (what an operator states for sources
  // that carry none). Fails when `bytes` is not positive or below a node's reserved memory.
  core::Status assume_numa_memory(std::int64_t bytes);

  // Same host, source, vertices, edges in the same order and distances (what a JSON round trip
  // keeps).
  bool operator==(const HostTopology&) const = default;

 private:
  friend class HostTopologyBuilder;
  std::string hostname_;
  std::string source_;
  std::vector<TopoNode> nodes_;
  std::vector<TopoEdge> edges_;
  std::vector<std::int64_t> numa_distances_;
  std::vector<int> sockets_, numa_, core_groups_, gpus_;
  std::vector<std::vector<int>> numa_gpus_, numa_core_groups_, socket_numa_;
};

// Builds a HostTopology vertex by vertex; the host, contain and localized edges follow from the
// parents given, nearby edges are added explicitly. Every loader goes through it, so every
// topology obeys the same rules (checked by build()).
class HostTopologyBuilder {
 public:
  HostTopologyBuilder(std::string hostname, std::string source);

  // Each returns the new vertex's index in its typed list (socket i, NUMA j, ...).
  int add_socket(int os_index);
  // `memory_bytes`: nullopt when the source does not say.
  int add_numa(int socket, int os_index, std::optional<std::int64_t> memory_bytes);
  int add_core_group(int numa, std::vector<int> cpus, int cores);
  int add_gpu(int numa, TopoNode gpu);  // kind, socket and numa are filled in
  // A nearby edge between GPUs a and b (indices into gpus()).
  void add_gpu_link(int a, int b, std::string via);
  // The kubelet's reservation on NUMA node `numa` (see TopoNode).
  void reserve(int numa, std::vector<int> cpus, std::int64_t memory_bytes);
  // The firmware's NUMA distances, n x n row-major for the n NUMA nodes added.
  void set_numa_distances(std::vector<std::int64_t> distances);

  // Fails (Domain::kTopology) naming what is wrong: no socket, a NUMA node without a socket, a
  // parent index out of range, a core group with no cores, duplicate GPU bus ids or UUIDs, a
  // reserved CPU
  // that a core group holds or that is reserved twice, more memory reserved than a NUMA node has,
  // a distance matrix that is not n x n or has a negative entry. NUMA nodes of one socket get
  // nearby edges ("same-socket").
  core::Result<HostTopology> build() &&;

 private:
  int node_socket(int numa) const {
    return t_.node(t_.numa_[static_cast<std::size_t>(numa)]).socket;
  }
  HostTopology t_;
  core::Status error_;  // first error seen while adding; reported by build()
};

}  // namespace tessera::hw
