#pragma once
// Small servers and pods for cluster-level tests, built by hand with hw::HostTopologyBuilder so a
// test reads its own topology: sockets x NUMA nodes per socket, GPUs and equal core groups per NUMA
// node. Round numbers chosen for arithmetic, not facts about any server.
//
//   auto topo = test::server(test::ServerSpec{});          // 2 sockets x 1 NUMA, 4 GPUs each
//   auto pod = test::pod("svc-0", 100, 2).cores(8).numa().guaranteed().build();

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/cluster/state/pod.hpp"
#include "tessera/hw/topology/host_topology.hpp"

namespace tessera::test {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

struct ServerSpec {
  std::string hostname = "node";
  int sockets = 2;
  int numa_per_socket = 1;
  int gpus_per_numa = 4;
  int groups_per_numa = 4;
  int cores_per_group = 4;
  std::int64_t memory_per_numa = 256 * kGiB;
  // When not empty: the core group sizes of every NUMA node (overrides the two above).
  std::vector<int> group_cores;
  // GPUs of a NUMA node linked in pairs through a shared PCIe switch (0-1, 2-3, ...).
  bool switch_pairs = false;
};

// 2 sockets x 2 NUMA nodes x 2 GPUs (the rtx4090-2s2n shape): NUMA j holds GPUs 2j, 2j+1 and core
// groups 4j..4j+3 of 4 cores.
inline ServerSpec two_by_two() {
  ServerSpec s;
  s.numa_per_socket = 2;
  s.gpus_per_numa = 2;
  s.memory_per_numa = 128 * kGiB;
  return s;
}

// Fails the calling test through the returned nullptr only if the spec is invalid.
inline std::shared_ptr<const hw::HostTopology> server(const ServerSpec& s) {
  hw::HostTopologyBuilder b(s.hostname, "test:cluster_builders");
  std::vector<int> sizes = s.group_cores;
  if (sizes.empty()) sizes.assign(static_cast<std::size_t>(s.groups_per_numa), s.cores_per_group);
  int cpu = 0;
  int gpu = 0;
  for (int so = 0; so < s.sockets; ++so) {
    const int socket = b.add_socket(so);
    for (int n = 0; n < s.numa_per_socket; ++n) {
      const int numa = b.add_numa(socket, so * s.numa_per_socket + n, s.memory_per_numa);
      for (int cores : sizes) {
        std::vector<int> cpus;
        for (int c = 0; c < cores; ++c) cpus.push_back(cpu++);
        b.add_core_group(numa, std::move(cpus), cores);
      }
      for (int g = 0; g < s.gpus_per_numa; ++g, ++gpu) {
        hw::TopoNode node;
        node.pci_bus_id = fmt::format("0000:{:02x}:00.0", gpu + 1);
        node.memory_bytes = 24 * kGiB;
        b.add_gpu(numa, std::move(node));
        if (s.switch_pairs && g % 2 == 1) b.add_gpu_link(gpu - 1, gpu, "pcie-switch");
      }
    }
  }
  auto t = std::move(b).build();
  if (!t) return nullptr;
  return std::make_shared<const hw::HostTopology>(std::move(*t));
}

class PodBuilder {
 public:
  PodBuilder(std::string name, std::int32_t priority, int gpus) {
    p_.name = std::move(name);
    p_.uid = "uid-" + p_.name;
    p_.priority = priority;
    p_.request.gpus = gpus;
  }
  PodBuilder& cores(int n) {
    p_.request.cpus = n;
    return *this;
  }
  PodBuilder& memory(std::int64_t bytes) {
    p_.request.memory_bytes = bytes;
    return *this;
  }
  PodBuilder& numa() {
    p_.topology = cluster::TopologyRequirement::kNuma;
    return *this;
  }
  PodBuilder& socket() {
    p_.topology = cluster::TopologyRequirement::kSocket;
    return *this;
  }
  PodBuilder& guaranteed() {
    p_.qos = cluster::Qos::kGuaranteed;
    return *this;
  }
  PodBuilder& start(std::int64_t seq) {
    p_.start_seq = seq;
    return *this;
  }
  cluster::Pod build() const { return p_; }
  operator cluster::Pod() const { return p_; }  // NOLINT: lets a builder stand for a Pod

 private:
  cluster::Pod p_;
};

inline PodBuilder pod(std::string name, std::int32_t priority, int gpus) {
  return PodBuilder(std::move(name), priority, gpus);
}

// An assignment of whole GPUs and core groups, memory on one NUMA node.
inline cluster::Assignment assignment(std::vector<int> gpus, std::vector<int> core_groups = {},
                                      int numa = 0, std::int64_t bytes = 0) {
  cluster::Assignment a;
  a.gpus = std::move(gpus);
  a.core_groups = std::move(core_groups);
  if (bytes > 0) {
    cluster::Assignment::Memory m;
    m.numa = numa;
    m.bytes = bytes;
    a.memory.push_back(m);
  }
  return a;
}

// A cluster of `n` identical servers named node0, node1, ...
inline cluster::ClusterState cluster_of(int n, ServerSpec spec) {
  cluster::ClusterState state;
  for (int i = 0; i < n; ++i) {
    spec.hostname = fmt::format("node{}", i);
    (void)state.add_node(spec.hostname, server(spec));
  }
  return state;
}

}  // namespace tessera::test
