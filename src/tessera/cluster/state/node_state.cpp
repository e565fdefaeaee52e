#include "tessera/cluster/state/node_state.hpp"

#include <algorithm>

namespace tessera::cluster {

namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

}  // namespace

std::vector<NumaFree> capacity_per_numa(const hw::HostTopology& t) {
  std::vector<NumaFree> out(t.numa_nodes().size());
  for (std::size_t j = 0; j < out.size(); ++j) {
    const int numa = static_cast<int>(j);
    out[j].gpus = static_cast<int>(t.gpus_of_numa(numa).size());
    out[j].core_groups = static_cast<int>(t.core_groups_of_numa(numa).size());
    for (int g : t.core_groups_of_numa(numa)) out[j].cores += t.core_group(g).cores;
    const hw::TopoNode& n = t.numa(numa);
    // The builder keeps the reservation within the memory, so this is never negative.
    out[j].memory_bytes =
        n.local_memory_bytes ? *n.local_memory_bytes - n.reserved_memory_bytes : kUnlimitedMemory;
  }
  return out;
}

NodeState::NodeState(std::string name, std::shared_ptr<const hw::HostTopology> topology)
    : topology_(std::move(topology)), name_(std::move(name)) {
  const hw::HostTopology& t = *topology_;
  gpu_owner_.assign(t.gpus().size(), -1);
  core_group_owner_.assign(t.core_groups().size(), -1);
  numa_memory_used_.assign(t.numa_nodes().size(), 0);
  free_ = capacity_per_numa(t);
}

core::Status NodeState::take(int pod, std::int32_t priority, const Assignment& a) {
  const hw::HostTopology& t = *topology_;
  const auto refuse = [&](std::string what) {
    return core::failf(core::Domain::kCluster, core::Code::kFailedPrecondition,
                       "node '{}': cannot give pod {} {}", name_, pod, what);
  };
  const int n_gpus = static_cast<int>(gpu_owner_.size());
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    const int g = a.gpus[i];
    if (g < 0 || g >= n_gpus) {
      return refuse(fmt::format("GPU {}: the node has GPUs 0-{}", g, n_gpus - 1));
    }
    if (gpu_owner_[at(g)] != -1) {
      return refuse(fmt::format("GPU {}: held by pod {}", g, gpu_owner_[at(g)]));
    }
    if (std::find(a.gpus.begin(), a.gpus.begin() + static_cast<std::ptrdiff_t>(i), g) !=
        a.gpus.begin() + static_cast<std::ptrdiff_t>(i)) {
      return refuse(fmt::format("GPU {} twice", g));
    }
  }
  const int n_groups = static_cast<int>(core_group_owner_.size());
  for (std::size_t i = 0; i < a.core_groups.size(); ++i) {
    const int g = a.core_groups[i];
    if (g < 0 || g >= n_groups) {
      return refuse(fmt::format("core group {}: the node has core groups 0-{}", g, n_groups - 1));
    }
    if (core_group_owner_[at(g)] != -1) {
      return refuse(fmt::format("core group {}: held by pod {}", g, core_group_owner_[at(g)]));
    }
    if (std::find(a.core_groups.begin(), a.core_groups.begin() + static_cast<std::ptrdiff_t>(i),
                  g) != a.core_groups.begin() + static_cast<std::ptrdiff_t>(i)) {
      return refuse(fmt::format("core group {} twice", g));
    }
  }
  std::vector<std::int64_t> want(numa_memory_used_.size(), 0);
  for (const Assignment::Memory& m : a.memory) {
    if (m.numa < 0 || at(m.numa) >= want.size()) {
      return refuse(fmt::format("memory on NUMA node {}: the node has NUMA nodes 0-{}", m.numa,
                                want.size() - 1));
    }
    if (m.bytes < 0) return refuse(fmt::format("{} bytes on NUMA node {}", m.bytes, m.numa));
    if (__builtin_add_overflow(want[at(m.numa)], m.bytes, &want[at(m.numa)])) {
      return refuse(fmt::format("more than 2^63 bytes on NUMA node {}", m.numa));
    }
  }
  for (std::size_t j = 0; j < want.size(); ++j) {
    if (want[j] > free_[j].memory_bytes) {
      return refuse(
          fmt::format("{} bytes on NUMA node {}: {} free", want[j], j, free_[j].memory_bytes));
    }
    std::int64_t used = 0;
    if (__builtin_add_overflow(numa_memory_used_[j], want[j], &used)) {
      return refuse(
          fmt::format("{} more bytes on NUMA node {}: {} are held already, and the "
                      "sum passes 2^63",
                      want[j], j, numa_memory_used_[j]));
    }
  }

  std::vector<NumaFree> held(want.size());
  for (int g : a.gpus) {
    gpu_owner_[at(g)] = pod;
    ++held[at(t.gpu(g).numa)].gpus;
  }
  for (int g : a.core_groups) {
    core_group_owner_[at(g)] = pod;
    NumaFree& h = held[at(t.core_group(g).numa)];
    ++h.core_groups;
    h.cores += t.core_group(g).cores;
  }
  for (std::size_t j = 0; j < want.size(); ++j) {
    numa_memory_used_[j] += want[j];
    held[j].memory_bytes = want[j];
    NumaFree& f = free_[j];
    f.gpus -= held[j].gpus;
    f.core_groups -= held[j].core_groups;
    f.cores -= held[j].cores;
    if (f.memory_bytes != kUnlimitedMemory) f.memory_bytes -= held[j].memory_bytes;
    if (held[j].gpus + held[j].core_groups > 0 || held[j].memory_bytes > 0) {
      Holding h;
      h.pod = pod;
      h.numa = static_cast<int>(j);
      h.amount = held[j];
      h.priority = priority;
      // After the pod's earlier entries (a second take for the same pod), so they stay together.
      const auto last = std::find_if(holdings_.rbegin(), holdings_.rend(),
                                     [&](const Holding& x) { return x.pod == pod; });
      holdings_.insert(last == holdings_.rend() ? holdings_.end() : last.base(), h);
    }
  }
  if (std::find(pods_.begin(), pods_.end(), pod) == pods_.end()) pods_.push_back(pod);
  return {};
}

void NodeState::release(int pod, const Assignment& a) {
  const hw::HostTopology& t = *topology_;
  const auto holding = [&](int numa) -> NumaFree* {
    for (Holding& h : holdings_) {
      if (h.pod == pod && h.numa == numa) return &h.amount;
    }
    return nullptr;
  };
  for (int g : a.gpus) {
    if (g < 0 || at(g) >= gpu_owner_.size() || gpu_owner_[at(g)] != pod) continue;
    gpu_owner_[at(g)] = -1;
    const int numa = t.gpu(g).numa;
    ++free_[at(numa)].gpus;
    if (NumaFree* h = holding(numa)) --h->gpus;
  }
  for (int g : a.core_groups) {
    if (g < 0 || at(g) >= core_group_owner_.size() || core_group_owner_[at(g)] != pod) continue;
    core_group_owner_[at(g)] = -1;
    const int numa = t.core_group(g).numa;
    const int cores = t.core_group(g).cores;
    ++free_[at(numa)].core_groups;
    free_[at(numa)].cores += cores;
    if (NumaFree* h = holding(numa)) {
      --h->core_groups;
      h->cores -= cores;
    }
  }
  for (const Assignment::Memory& m : a.memory) {
    if (m.numa < 0 || at(m.numa) >= numa_memory_used_.size() || m.bytes <= 0) continue;
    // Never below zero, so a release that does not match a take cannot invent memory.
    const std::int64_t back = std::min(m.bytes, numa_memory_used_[at(m.numa)]);
    numa_memory_used_[at(m.numa)] -= back;
    // What was taken from a bounded node returns to it (free + used never passes its size).
    if (free_[at(m.numa)].memory_bytes != kUnlimitedMemory) free_[at(m.numa)].memory_bytes += back;
    if (NumaFree* h = holding(m.numa)) h->memory_bytes -= std::min(back, h->memory_bytes);
  }
  std::erase_if(holdings_, [&](const Holding& h) {
    return h.pod == pod && h.amount.gpus + h.amount.core_groups == 0 && h.amount.memory_bytes == 0;
  });
  if (std::none_of(holdings_.begin(), holdings_.end(),
                   [&](const Holding& h) { return h.pod == pod; })) {
    std::erase(pods_, pod);
  }
}

Affinity affinity_of(const hw::HostTopology& topology, const Assignment& a) {
  int numa = -1;
  int socket = -1;
  bool multi_numa = false;
  bool multi_socket = false;
  const auto see = [&](const hw::TopoNode& n) {
    if (numa == -1) {
      numa = n.numa;
      socket = n.socket;
      return;
    }
    multi_numa = multi_numa || n.numa != numa;
    multi_socket = multi_socket || n.socket != socket;
  };
  const auto n_gpus = static_cast<int>(topology.gpus().size());
  const auto n_groups = static_cast<int>(topology.core_groups().size());
  const auto n_numa = static_cast<int>(topology.numa_nodes().size());
  for (int g : a.gpus) {
    if (g < 0 || g >= n_gpus) return Affinity::kCrossSocket;
    see(topology.gpu(g));
  }
  for (int g : a.core_groups) {
    if (g < 0 || g >= n_groups) return Affinity::kCrossSocket;
    see(topology.core_group(g));
  }
  for (const Assignment::Memory& m : a.memory) {
    if (m.numa < 0 || m.numa >= n_numa) return Affinity::kCrossSocket;
    if (m.bytes > 0) see(topology.numa(m.numa));
  }
  if (multi_socket) return Affinity::kCrossSocket;
  return multi_numa ? Affinity::kSameSocket : Affinity::kSameNuma;
}

}  // namespace tessera::cluster
