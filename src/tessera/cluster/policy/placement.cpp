#include "tessera/cluster/policy/placement.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <tuple>

#include "tessera/cluster/policy/preemption.hpp"

namespace tessera::cluster {

namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

bool covers(const NumaFree& f, const Resources& r) {
  return f.gpus >= r.gpus && f.cores >= r.cpus && f.memory_bytes >= r.memory_bytes;
}

// What a domain keeps free after the request; compared GPUs first (the scarce resource), then
// cores, then memory: smaller is a tighter fit.
using Leftover = std::tuple<int, int, std::int64_t>;
Leftover leftover(const NumaFree& f, const Resources& r) {
  return {f.gpus - r.gpus, f.cores - r.cpus, f.memory_bytes - r.memory_bytes};
}

// The NUMA nodes a placement draws from and the level they reach.
struct Plan {
  Affinity affinity = Affinity::kSameNuma;
  std::vector<int> numa;  // in the order resources are taken from them
  NumaFree domain;        // their free resources together
};

// Exact search over subsets is cheap for the NUMA counts servers have (2-8; 2^8 subsets); above
// this, the fewest NUMA nodes are taken greedily, most free GPUs first.
constexpr std::size_t kMaxExactNuma = 12;

// The smallest subset of `candidates` that covers `r`: fewest sockets (when `count_sockets`), then
// fewest NUMA nodes, then least left over; ties to the first found.
std::optional<std::vector<int>> smallest_cover(const hw::HostTopology& t,
                                               std::span<const NumaFree> free, const Resources& r,
                                               std::span<const int> candidates,
                                               bool count_sockets) {
  const std::size_t m = candidates.size();
  if (m == 0) return std::nullopt;
  if (m > kMaxExactNuma) {
    std::vector<int> order(candidates.begin(), candidates.end());
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return std::tie(free[at(a)].gpus, free[at(a)].cores, free[at(a)].memory_bytes) >
             std::tie(free[at(b)].gpus, free[at(b)].cores, free[at(b)].memory_bytes);
    });
    NumaFree sum;
    std::vector<int> chosen;
    for (int j : order) {
      sum += free[at(j)];
      chosen.push_back(j);
      if (covers(sum, r)) return chosen;
    }
    return std::nullopt;
  }
  using Key = std::tuple<int, int, Leftover>;
  std::optional<Key> best_key;
  std::uint32_t best_mask = 0;
  for (std::uint32_t mask = 1; mask < (1u << m); ++mask) {
    NumaFree sum;
    std::uint32_t sockets = 0;
    for (std::size_t i = 0; i < m; ++i) {
      if ((mask & (1u << i)) == 0) continue;
      const int j = candidates[i];
      sum += free[at(j)];
      sockets |= 1u << (static_cast<unsigned>(t.numa(j).socket) % 32u);
    }
    if (!covers(sum, r)) continue;
    const Key key{count_sockets ? std::popcount(sockets) : 0, std::popcount(mask),
                  leftover(sum, r)};
    if (!best_key || key < *best_key) {
      best_key = key;
      best_mask = mask;
    }
  }
  if (!best_key) return std::nullopt;
  std::vector<int> chosen;
  for (std::size_t i = 0; i < m; ++i) {
    if (best_mask & (1u << i)) chosen.push_back(candidates[i]);
  }
  return chosen;
}

std::optional<Plan> choose_plan(const hw::HostTopology& t, std::span<const NumaFree> free,
                                const Resources& r) {
  const int n = static_cast<int>(std::min(free.size(), t.numa_nodes().size()));
  Plan plan;
  std::optional<Leftover> best;
  for (int j = 0; j < n; ++j) {
    if (!covers(free[at(j)], r)) continue;
    const Leftover l = leftover(free[at(j)], r);
    if (!best || l < *best) {
      best = l;
      plan.numa = {j};
    }
  }
  if (best) {
    plan.affinity = Affinity::kSameNuma;
  } else {
    std::optional<std::tuple<std::size_t, Leftover>> best_socket;
    for (std::size_t s = 0; s < t.sockets().size(); ++s) {
      std::vector<int> local;
      for (int j : t.numa_of_socket(static_cast<int>(s))) {
        if (j < n) local.push_back(j);
      }
      auto cover = smallest_cover(t, free, r, local, false);
      if (!cover) continue;
      NumaFree sum;
      for (int j : *cover) sum += free[at(j)];
      const std::tuple<std::size_t, Leftover> key{cover->size(), leftover(sum, r)};
      if (!best_socket || key < *best_socket) {
        best_socket = key;
        plan.numa = std::move(*cover);
      }
    }
    if (best_socket) {
      plan.affinity = Affinity::kSameSocket;
    } else {
      std::vector<int> all(at(n));
      for (int j = 0; j < n; ++j) all[at(j)] = j;
      auto cover = smallest_cover(t, free, r, all, true);
      if (!cover) return std::nullopt;
      plan.numa = std::move(*cover);
      plan.affinity = Affinity::kCrossSocket;
    }
  }
  // Take from the NUMA node with the most free first, so most of the pod sits together.
  std::stable_sort(plan.numa.begin(), plan.numa.end(), [&](int a, int b) {
    return std::tie(free[at(a)].gpus, free[at(a)].cores, free[at(a)].memory_bytes) >
           std::tie(free[at(b)].gpus, free[at(b)].cores, free[at(b)].memory_bytes);
  });
  for (int j : plan.numa) plan.domain += free[at(j)];
  return plan;
}

// The fewest free core groups of NUMA node `numa` that hold `share` cores: largest first, and the
// last one the smallest group that still covers what is missing. Returns the cores taken.
int take_core_groups(const NodeState& node, int numa, int share, std::vector<int>& out) {
  const hw::HostTopology& t = node.topology();
  std::vector<int> groups;
  for (int g : t.core_groups_of_numa(numa)) {
    if (node.core_group_owner()[at(g)] == -1) groups.push_back(g);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [&](int a, int b) { return t.core_group(a).cores > t.core_group(b).cores; });
  int got = 0;
  std::size_t next = 0;  // groups[next..] are still unpicked, largest first
  while (got < share && next < groups.size()) {
    const int missing = share - got;
    // groups is sorted descending: the last one with cores >= missing is the smallest that covers.
    std::size_t fit = groups.size();
    for (std::size_t i = next; i < groups.size() && t.core_group(groups[i]).cores >= missing; ++i) {
      fit = i;
    }
    if (fit != groups.size()) {
      // Of equal groups, the lowest index (the sort is stable).
      while (fit > next && t.core_group(groups[fit - 1]).cores == t.core_group(groups[fit]).cores) {
        --fit;
      }
      out.push_back(groups[fit]);
      got += t.core_group(groups[fit]).cores;
      break;
    }
    out.push_back(groups[next]);
    got += t.core_group(groups[next]).cores;
    ++next;
  }
  return got;
}

// `count` free GPUs of NUMA node `numa`, kept together on their links: free GPUs joined by nearby
// edges (NVLink, NVSwitch, a shared PCIe switch) form groups; the smallest group that holds them
// all is used, else the largest groups first, so linked GPUs go to one pod and whole groups stay
// whole for the next. Lowest indices on ties.
void take_gpus(const NodeState& node, int numa, int count, std::vector<int>& out) {
  const hw::HostTopology& t = node.topology();
  std::vector<int> free;
  for (int g : t.gpus_of_numa(numa)) {
    if (node.gpu_owner()[at(g)] == -1) free.push_back(g);
  }
  // Union-find over the free GPUs of this NUMA node, by position in `free`.
  std::vector<int> parent(free.size());
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](int x) {
    while (parent[at(x)] != x) x = parent[at(x)] = parent[at(parent[at(x)])];
    return x;
  };
  const auto position = [&](int node_id) -> int {
    for (std::size_t i = 0; i < free.size(); ++i) {
      if (t.gpus()[at(free[i])] == node_id) return static_cast<int>(i);
    }
    return -1;
  };
  for (const hw::TopoEdge& e : t.edges()) {
    if (e.kind != hw::TopoEdgeKind::kNearby || t.node(e.from).kind != hw::TopoKind::kGpu) continue;
    const int x = position(e.from);
    const int y = position(e.to);
    if (x >= 0 && y >= 0) parent[at(root(x))] = root(y);
  }
  std::vector<std::vector<int>> groups;
  std::vector<int> group_of(free.size(), -1);
  for (std::size_t i = 0; i < free.size(); ++i) {
    const int r = root(static_cast<int>(i));
    if (group_of[at(r)] < 0) {
      group_of[at(r)] = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[at(group_of[at(r)])].push_back(free[i]);  // ascending: `free` is
  }
  // Groups that hold everything, smallest first; then the others, largest first.
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    const bool fa = static_cast<int>(a.size()) >= count;
    const bool fb = static_cast<int>(b.size()) >= count;
    if (fa != fb) return fa;
    return fa ? a.size() < b.size() : a.size() > b.size();
  });
  for (const auto& group : groups) {
    for (int g : group) {
      if (count == 0) return;
      out.push_back(g);
      --count;
    }
  }
}

std::string gib(std::int64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(1LL << 30));
}

// Free memory for a message; a NUMA node of unknown size has no number to show.
std::string free_memory(std::int64_t bytes) {
  return bytes == kUnlimitedMemory ? std::string("memory unknown") : gib(bytes);
}

std::string describe(const Resources& r) {
  std::vector<std::string> parts;
  if (r.gpus > 0) parts.push_back(fmt::format("{} GPU{}", r.gpus, r.gpus == 1 ? "" : "s"));
  if (r.cpus > 0) parts.push_back(fmt::format("{} CPU cores", r.cpus));
  if (r.memory_bytes > 0) parts.push_back(gib(r.memory_bytes) + " memory");
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string_view within(TopologyRequirement req) {
  switch (req) {
    case TopologyRequirement::kNuma: return "within one NUMA node";
    case TopologyRequirement::kSocket: return "within one socket";
    case TopologyRequirement::kNone: return "anywhere";
  }
  return "?";
}

std::string free_per_numa_text(std::span<const NumaFree> free) {
  std::vector<std::string> parts;
  for (std::size_t j = 0; j < free.size(); ++j) {
    parts.push_back(fmt::format("numa{} {} GPUs/{} cores/{}", j, free[j].gpus, free[j].cores,
                                free_memory(free[j].memory_bytes)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Why `pod` is refused by `node`; empty when it is not.
std::string refusal(const NodeState& node, const Pod& pod, std::optional<Affinity> affinity) {
  const auto& free = node.free_per_numa();
  if (!affinity) {
    NumaFree total;
    for (const NumaFree& f : free) total += f;
    std::vector<std::string> short_of;
    const Resources& r = pod.request;
    if (total.gpus < r.gpus) {
      short_of.push_back(fmt::format("needs {} GPUs, {} free", r.gpus, total.gpus));
    }
    if (total.cores < r.cpus) {
      short_of.push_back(fmt::format("needs {} CPU cores, {} free in {} whole core groups", r.cpus,
                                     total.cores, total.core_groups));
    }
    if (total.memory_bytes < r.memory_bytes) {
      short_of.push_back(
          fmt::format("needs {} memory, {} free", gib(r.memory_bytes), gib(total.memory_bytes)));
    }
    return fmt::format("{}", fmt::join(short_of, "; "));
  }
  if (acceptable(pod, *affinity)) return {};
  return fmt::format(
      "guaranteed pod needs {} {} (topology requirement {}); the best here is {}; "
      "free per NUMA node: {}",
      describe(pod.request), within(pod.topology), to_string(pod.topology), to_string(*affinity),
      free_per_numa_text(free));
}

}  // namespace

std::optional<Affinity> best_affinity(const hw::HostTopology& topology,
                                      std::span<const NumaFree> free, const Resources& request) {
  // Most nodes of a full cluster do not hold the request at all: say so before reading the
  // topology (another node's memory, in a search over thousands).
  NumaFree everything;
  for (const NumaFree& f : free) everything += f;
  if (!covers(everything, request)) return std::nullopt;
  const std::size_t n = std::min(free.size(), topology.numa_nodes().size());
  for (std::size_t j = 0; j < n; ++j) {
    if (covers(free[j], request)) return Affinity::kSameNuma;
  }
  NumaFree total;
  for (std::size_t s = 0; s < topology.sockets().size(); ++s) {
    NumaFree sum;
    for (int j : topology.numa_of_socket(static_cast<int>(s))) {
      if (at(j) < n) sum += free[at(j)];
    }
    if (covers(sum, request)) return Affinity::kSameSocket;
    total += sum;
  }
  if (covers(total, request)) return Affinity::kCrossSocket;
  return std::nullopt;
}

std::optional<Assignment> best_assignment(const NodeState& node, const Resources& request) {
  const hw::HostTopology& t = node.topology();
  const auto plan = choose_plan(t, node.free_per_numa(), request);
  if (!plan) return std::nullopt;
  Assignment a;
  int gpus_left = request.gpus;
  int cores_left = request.cpus;
  std::int64_t memory_left = request.memory_bytes;
  for (int j : plan->numa) {
    if (gpus_left > 0) {
      const int share = std::min(gpus_left, node.free_per_numa()[at(j)].gpus);
      take_gpus(node, j, share, a.gpus);
      gpus_left -= share;
    }
    if (cores_left > 0) {
      const int share = std::min(cores_left, node.free_per_numa()[at(j)].cores);
      cores_left -= take_core_groups(node, j, share, a.core_groups);
    }
    const std::int64_t bytes = std::min(memory_left, node.free_per_numa()[at(j)].memory_bytes);
    if (bytes > 0) {
      Assignment::Memory m;
      m.numa = j;
      m.bytes = bytes;
      a.memory.push_back(m);
      memory_left -= bytes;
    }
  }
  std::sort(a.gpus.begin(), a.gpus.end());
  std::sort(a.core_groups.begin(), a.core_groups.end());
  a.affinity = affinity_of(t, a);
  return a;
}

bool acceptable(const Pod& pod, Affinity affinity) {
  return pod.qos == Qos::kBestEffort || satisfies(affinity, pod.topology);
}

std::vector<NodeVerdict> filter_nodes(const ClusterState& state, const Pod& pod,
                                      std::span<const int> nodes) {
  std::vector<int> all;
  if (nodes.empty()) {
    all.resize(state.nodes().size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    nodes = all;
  }
  const auto valid = validate(pod);
  std::vector<NodeVerdict> out;
  out.reserve(nodes.size());
  for (int i : nodes) {
    NodeVerdict v;
    v.node = i;
    if (!valid) {
      v.reason = valid.error().message();
    } else if (i < 0 || at(i) >= state.nodes().size()) {
      v.reason = fmt::format("node {} does not exist ({} nodes)", i, state.nodes().size());
    } else {
      const NodeState& n = state.node(i);
      const auto affinity = best_affinity(n.topology(), n.free_per_numa(), pod.request);
      v.reason = refusal(n, pod, affinity);
      v.fits = v.reason.empty();
      if (v.fits) v.affinity = affinity;
    }
    out.push_back(std::move(v));
  }
  return out;
}

int score_node(const ClusterState& state, const Pod& pod, int node) {
  if (node < 0 || at(node) >= state.nodes().size() || !validate(pod)) return 0;
  const NodeState& n = state.node(node);
  const auto plan = choose_plan(n.topology(), n.free_per_numa(), pod.request);
  if (!plan || !acceptable(pod, plan->affinity)) return 0;
  // Affinity takes 0-8 (8 T: 8 same NUMA, 6 same socket, 2 across sockets with the default
  // TopologyScores); the fit adds 0-2, so a better affinity never scores below a worse one.
  const int base = static_cast<int>(std::floor(8.0 * TopologyScores{}.of(plan->affinity)));
  // Fit: what the placement leaves free in the NUMA nodes it lands on, of the scarcest resource
  // it asks for: nothing 2, at most half 1, more 0 (a tight fit keeps other holes whole).
  const Resources& r = pod.request;
  double left = 0;
  if (r.gpus > 0) {
    left = static_cast<double>(plan->domain.gpus - r.gpus) / plan->domain.gpus;
  } else if (r.cpus > 0) {
    left = static_cast<double>(plan->domain.cores - r.cpus) / plan->domain.cores;
  } else {
    left = static_cast<double>(plan->domain.memory_bytes - r.memory_bytes) /
           static_cast<double>(plan->domain.memory_bytes);
  }
  const int fit = left == 0 ? 2 : (left <= 0.5 ? 1 : 0);
  return std::clamp(base + fit, 0, 10);
}

PlacementDecision place(const ClusterState& state, const Pod& pod) {
  PlacementDecision d;
  if (auto valid = validate(pod); !valid) {
    d.status = DecisionStatus::kInvalid;
    d.reason = valid.error().message();
    return d;
  }
  std::vector<std::optional<Affinity>> level(state.nodes().size());
  std::optional<Affinity> best;
  for (std::size_t i = 0; i < level.size(); ++i) {
    const NodeState& n = state.nodes()[i];
    level[i] = best_affinity(n.topology(), n.free_per_numa(), pod.request);
    if (!level[i] || !acceptable(pod, *level[i])) {
      level[i].reset();
      continue;
    }
    if (!best || *level[i] < *best) best = level[i];
  }
  if (!best) {
    d.reason = fmt::format(
        "none of the {} nodes has room for pod '{}' ({}) {}", state.nodes().size(), pod.name,
        describe(pod.request),
        pod.qos == Qos::kBestEffort ? within(TopologyRequirement::kNone) : within(pod.topology));
    return d;
  }
  int chosen = -1;
  int chosen_score = -1;
  for (std::size_t i = 0; i < level.size(); ++i) {
    if (level[i] != best) continue;
    const int s = score_node(state, pod, static_cast<int>(i));
    if (s > chosen_score) {
      chosen = static_cast<int>(i);
      chosen_score = s;
    }
  }
  auto a = best_assignment(state.node(chosen), pod.request);
  if (!a) {
    d.reason = fmt::format("node {} reaches {} for pod '{}' but has no assignment for it",
                           state.node(chosen).name(), to_string(*best), pod.name);
    return d;
  }
  d.status = DecisionStatus::kChosen;
  d.placement = Placement{.node = chosen, .assignment = std::move(*a)};
  return d;
}

}  // namespace tessera::cluster
