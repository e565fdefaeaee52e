#include "tessera/hw/topology/host_topology.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "tessera/core/log.hpp"

namespace tessera::hw {

std::string_view to_string(TopoKind k) {
  switch (k) {
    case TopoKind::kMachine: return "machine";
    case TopoKind::kSocket: return "socket";
    case TopoKind::kNuma: return "numa";
    case TopoKind::kCoreGroup: return "core-group";
    case TopoKind::kGpu: return "gpu";
  }
  return "?";
}

std::string_view to_string(TopoEdgeKind k) {
  switch (k) {
    case TopoEdgeKind::kHost: return "host";
    case TopoEdgeKind::kContain: return "contain";
    case TopoEdgeKind::kLocalized: return "localized";
    case TopoEdgeKind::kNearby: return "nearby";
  }
  return "?";
}

int HostTopology::total_cores() const {
  int n = 0;
  for (int id : core_groups_) n += node(id).cores;
  return n;
}

std::optional<std::int64_t> HostTopology::total_memory_bytes() const {
  std::int64_t n = 0;
  for (int id : numa_) {
    const auto& memory = node(id).local_memory_bytes;
    if (!memory || __builtin_add_overflow(n, *memory, &n)) return std::nullopt;
  }
  return n;
}

core::Status HostTopology::assume_numa_memory(std::int64_t bytes) {
  if (bytes <= 0) {
    return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                       "{}: NUMA node memory of {} bytes; give a positive size", hostname_, bytes);
  }
  for (int id : numa_) {
    const TopoNode& n = nodes_[static_cast<std::size_t>(id)];
    if (!n.local_memory_bytes && n.reserved_memory_bytes > bytes) {
      return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                         "{}: {} has {} bytes reserved, more than the {} bytes assumed for it",
                         hostname_, n.name, n.reserved_memory_bytes, bytes);
    }
  }
  for (int id : numa_) {
    auto& memory = nodes_[static_cast<std::size_t>(id)].local_memory_bytes;
    if (!memory) memory = bytes;
  }
  return {};
}

namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

TopoNode vertex(TopoKind kind, std::string name, int os_index, int socket, int numa) {
  TopoNode n;
  n.kind = kind;
  n.name = std::move(name);
  n.os_index = os_index;
  n.socket = socket;
  n.numa = numa;
  return n;
}

TopoEdge edge(TopoEdgeKind kind, int from, int to, std::string via = {}) {
  TopoEdge e;
  e.kind = kind;
  e.from = from;
  e.to = to;
  e.via = std::move(via);
  return e;
}

}  // namespace

HostTopologyBuilder::HostTopologyBuilder(std::string hostname, std::string source) {
  t_.hostname_ = std::move(hostname);
  t_.source_ = std::move(source);
  t_.nodes_.push_back(vertex(TopoKind::kMachine, "machine", -1, -1, -1));
}

// The first error is kept and reported by build(); later calls still return an index so callers
// need not check each step.
#define TESSERA_TOPO_CHECK(cond, ...)                                                           \
  do {                                                                                          \
    if (!(cond) && error_) {                                                                    \
      error_ = core::failf(core::Domain::kTopology, core::Code::kInvalidArgument, __VA_ARGS__); \
    }                                                                                           \
  } while (false)

int HostTopologyBuilder::add_socket(int os_index) {
  const int i = static_cast<int>(t_.sockets_.size());
  const int id = static_cast<int>(t_.nodes_.size());
  t_.nodes_.push_back(vertex(TopoKind::kSocket, fmt::format("socket{}", i), os_index, i, -1));
  t_.edges_.push_back(edge(TopoEdgeKind::kHost, 0, id));
  t_.sockets_.push_back(id);
  t_.socket_numa_.emplace_back();
  return i;
}

int HostTopologyBuilder::add_numa(int socket, int os_index,
                                  std::optional<std::int64_t> memory_bytes) {
  const int j = static_cast<int>(t_.numa_.size());
  const bool ok = socket >= 0 && at(socket) < t_.sockets_.size();
  TESSERA_TOPO_CHECK(ok, "NUMA node {} (os index {}): socket {} does not exist ({} sockets)", j,
                     os_index, socket, t_.sockets_.size());
  TESSERA_TOPO_CHECK(memory_bytes.value_or(0) >= 0, "NUMA node {}: negative memory", j);
  const int id = static_cast<int>(t_.nodes_.size());
  t_.nodes_.push_back(
      vertex(TopoKind::kNuma, fmt::format("numa{}", j), os_index, ok ? socket : -1, j));
  t_.nodes_.back().local_memory_bytes = memory_bytes;
  t_.numa_.push_back(id);
  t_.numa_gpus_.emplace_back();
  t_.numa_core_groups_.emplace_back();
  if (ok) {
    t_.edges_.push_back(edge(TopoEdgeKind::kContain, t_.sockets_[at(socket)], id));
    t_.socket_numa_[at(socket)].push_back(j);
  }
  return j;
}

int HostTopologyBuilder::add_core_group(int numa, std::vector<int> cpus, int cores) {
  const int g = static_cast<int>(t_.core_groups_.size());
  const bool ok = numa >= 0 && at(numa) < t_.numa_.size();
  TESSERA_TOPO_CHECK(ok, "core group {}: NUMA node {} does not exist ({} NUMA nodes)", g, numa,
                     t_.numa_.size());
  TESSERA_TOPO_CHECK(cores > 0, "core group {} on NUMA node {}: no cores", g, numa);
  const int id = static_cast<int>(t_.nodes_.size());
  const int j = ok ? numa : -1;
  const int first_cpu = cpus.empty() ? -1 : *std::min_element(cpus.begin(), cpus.end());
  const int nth = ok ? static_cast<int>(t_.numa_core_groups_[at(j)].size()) : g;
  t_.nodes_.push_back(vertex(TopoKind::kCoreGroup, fmt::format("cores{}.{}", numa, nth), first_cpu,
                             ok ? node_socket(j) : -1, j));
  t_.nodes_.back().cores = cores;
  t_.nodes_.back().cpus = std::move(cpus);
  t_.core_groups_.push_back(id);
  if (ok) {
    t_.edges_.push_back(edge(TopoEdgeKind::kContain, t_.numa_[at(j)], id));
    t_.numa_core_groups_[at(j)].push_back(g);
  }
  return g;
}

int HostTopologyBuilder::add_gpu(int numa, TopoNode gpu) {
  const int k = static_cast<int>(t_.gpus_.size());
  const bool ok = numa >= 0 && at(numa) < t_.numa_.size();
  TESSERA_TOPO_CHECK(ok, "GPU {} ({}): NUMA node {} does not exist ({} NUMA nodes)", k,
                     gpu.pci_bus_id, numa, t_.numa_.size());
  TESSERA_TOPO_CHECK(gpu.memory_bytes >= 0, "GPU {}: negative memory", k);
  gpu.kind = TopoKind::kGpu;
  if (gpu.name.empty()) gpu.name = fmt::format("gpu{}", k);
  gpu.numa = ok ? numa : -1;
  gpu.socket = ok ? node_socket(numa) : -1;
  const int id = static_cast<int>(t_.nodes_.size());
  t_.nodes_.push_back(std::move(gpu));
  t_.gpus_.push_back(id);
  if (ok) {
    t_.edges_.push_back(edge(TopoEdgeKind::kLocalized, id, t_.numa_[at(numa)]));
    t_.numa_gpus_[at(numa)].push_back(k);
  }
  return k;
}

void HostTopologyBuilder::add_gpu_link(int a, int b, std::string via) {
  const int n = static_cast<int>(t_.gpus_.size());
  const bool ok = a >= 0 && b >= 0 && a < n && b < n && a != b;
  TESSERA_TOPO_CHECK(ok, "link {} between GPUs {} and {}: needs two distinct GPUs of the {}", via,
                     a, b, n);
  if (!ok) return;
  const int x = t_.gpus_[at(std::min(a, b))];
  const int y = t_.gpus_[at(std::max(a, b))];
  t_.edges_.push_back(edge(TopoEdgeKind::kNearby, x, y, std::move(via)));
}

void HostTopologyBuilder::reserve(int numa, std::vector<int> cpus, std::int64_t memory_bytes) {
  const bool ok = numa >= 0 && at(numa) < t_.numa_.size();
  TESSERA_TOPO_CHECK(ok, "reservation on NUMA node {}: it does not exist ({} NUMA nodes)", numa,
                     t_.numa_.size());
  TESSERA_TOPO_CHECK(memory_bytes >= 0, "NUMA node {}: negative reserved memory", numa);
  TESSERA_TOPO_CHECK(std::ranges::all_of(cpus, [](int c) { return c >= 0; }),
                     "NUMA node {}: a negative reserved CPU number", numa);
  if (!ok) return;
  TopoNode& n = t_.nodes_[at(t_.numa_[at(numa)])];
  std::ranges::sort(cpus);
  n.reserved_cpus = std::move(cpus);
  n.reserved_memory_bytes = memory_bytes;
}

void HostTopologyBuilder::set_numa_distances(std::vector<std::int64_t> distances) {
  t_.numa_distances_ = std::move(distances);
}

core::Result<HostTopology> HostTopologyBuilder::build() && {
  if (!error_) return std::unexpected(error_.error());
  const auto fail = [&](std::string what) {
    return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument, "{} ({}): {}",
                       t_.hostname_, t_.source_, what);
  };
  if (t_.sockets_.empty()) return fail("no CPU socket");
  if (t_.numa_.empty()) return fail("no NUMA node");
  for (std::size_t i = 0; i < t_.sockets_.size(); ++i) {
    if (t_.socket_numa_[i].empty()) return fail(fmt::format("socket {} has no NUMA node", i));
  }
  // Anonymised exports zero every GPU's UUID, and some tools write one UUID for all: such a UUID
  // names no GPU, so each GPU holding one gets an id made from its PCI bus id (or its index).
  std::map<std::string, int> holders;
  for (int id : t_.gpus_) {
    const std::string& uuid = t_.nodes_[at(id)].uuid;
    if (!uuid.empty()) ++holders[uuid];
  }
  for (std::size_t k = 0; k < t_.gpus_.size(); ++k) {
    TopoNode& g = t_.nodes_[at(t_.gpus_[k])];
    if (g.uuid.empty()) continue;
    const bool zero = g.uuid.find_first_not_of("GPU-0") == std::string::npos;
    if (!zero && holders[g.uuid] < 2) continue;
    const std::string synthesised =
        g.pci_bus_id.empty() ? fmt::format("GPU-index-{}", k) : "GPU-pci-" + g.pci_bus_id;
    core::logger().warn("{} ({}): GPU {} has UUID {}, {}; it is named {} instead", t_.hostname_,
                        t_.source_, g.name, g.uuid,
                        zero ? "all zeros" : "which other GPUs of the host also have", synthesised);
    g.uuid = synthesised;
  }
  std::set<std::string> bus_ids, uuids;
  for (int id : t_.gpus_) {
    const TopoNode& g = t_.nodes_[at(id)];
    if (!g.pci_bus_id.empty() && !bus_ids.insert(g.pci_bus_id).second) {
      return fail(fmt::format("two GPUs at PCI bus id {}", g.pci_bus_id));
    }
    if (!g.uuid.empty() && !uuids.insert(g.uuid).second) {
      return fail(fmt::format("two GPUs with UUID {}", g.uuid));
    }
  }
  std::map<int, std::string> reserved_by;  // reserved CPU -> its NUMA node's name
  for (int id : t_.numa_) {
    const TopoNode& n = t_.nodes_[at(id)];
    for (int c : n.reserved_cpus) {
      if (auto [it, added] = reserved_by.emplace(c, n.name); !added) {
        return fail(it->second == n.name
                        ? fmt::format("CPU {} is reserved twice on {}", c, n.name)
                        : fmt::format("CPU {} is reserved on {} and on {}", c, it->second, n.name));
      }
    }
    if (n.local_memory_bytes && n.reserved_memory_bytes > *n.local_memory_bytes) {
      return fail(fmt::format("{} has {} bytes of memory; {} are reserved", n.name,
                              *n.local_memory_bytes, n.reserved_memory_bytes));
    }
  }
  for (int id : t_.core_groups_) {
    const TopoNode& g = t_.nodes_[at(id)];
    for (int c : g.cpus) {
      if (auto it = reserved_by.find(c); it != reserved_by.end()) {
        return fail(fmt::format("CPU {} is reserved on {} but core group {} holds it", c,
                                it->second, g.name));
      }
    }
  }
  const std::size_t n_numa = t_.numa_.size();
  if (!t_.numa_distances_.empty() && t_.numa_distances_.size() != n_numa * n_numa) {
    return fail(fmt::format("NUMA distances: {} values for {} NUMA nodes; expected {} ({} x {})",
                            t_.numa_distances_.size(), n_numa, n_numa * n_numa, n_numa, n_numa));
  }
  if (std::ranges::any_of(t_.numa_distances_, [](std::int64_t d) { return d < 0; })) {
    return fail("NUMA distances: a negative distance");
  }
  std::set<std::pair<int, int>> linked;
  for (const TopoEdge& e : t_.edges_) {
    if (e.kind == TopoEdgeKind::kNearby && !linked.insert({e.from, e.to}).second) {
      return fail(fmt::format("GPUs {} and {} are linked twice", t_.nodes_[at(e.from)].name,
                              t_.nodes_[at(e.to)].name));
    }
  }
  // NUMA nodes of one socket are near each other: memory between them crosses no socket link.
  for (const auto& numas : t_.socket_numa_) {
    for (std::size_t a = 0; a < numas.size(); ++a) {
      for (std::size_t b = a + 1; b < numas.size(); ++b) {
        t_.edges_.push_back(edge(TopoEdgeKind::kNearby, t_.numa_[at(numas[a])],
                                 t_.numa_[at(numas[b])], "same-socket"));
      }
    }
  }
  return std::move(t_);
}

#undef TESSERA_TOPO_CHECK

}  // namespace tessera::hw
