#include "tessera/cluster/policy/preemption.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace tessera::cluster {

// The default alpha, 0.1, from the scales of the two terms. P is in (0, 1], so two candidates'
// P differ by less than 1; T takes 1, 1/1.2 = 0.833 and 1/3.2 = 0.3125, so neighbouring affinity
// levels differ by at least dT = 1 - 1/1.2 = 0.167. Topology decides between levels whatever the
// victims' priorities when
//     alpha * 1 < (1 - alpha) * dT   <=>   alpha < dT / (1 + dT) = 1/7 = 0.143,
// and priority decides within a level for any alpha > 0 (T is then equal). 0.1 sits inside with
// room: it keeps topology first for any within-socket penalty above 1.125x (dT > 0.111), which
// covers FlexTopo's 1.2x (§2.2) and for_penalties(1.2, 2.0) for its A100 servers. alpha = 1 ranks
// by priority alone, alpha = 0 by topology alone.
namespace {

std::size_t at(int i) {
  return static_cast<std::size_t>(i);
}

// k8s's pkg/scheduler/framework/preemption sums priorities as int64(math.MaxInt32) + p + 1 per
// victim, so sums of negative priorities still compare by count.
constexpr std::int64_t kK8sPriorityOffset =
    std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;

// Calls f(idx) for every k-subset of [0, n) in lexicographic order; idx is reused.
template <typename F>
void for_each_combination(int n, int k, std::vector<int>& idx, F&& f) {
  if (k > n || k < 0) return;
  idx.resize(at(k));
  std::iota(idx.begin(), idx.end(), 0);
  while (true) {
    f(std::span<const int>(idx));
    int i = k - 1;
    while (i >= 0 && idx[at(i)] == n - k + i) --i;
    if (i < 0) return;
    ++idx[at(i)];
    for (int j = i + 1; j < k; ++j) idx[at(j)] = idx[at(j - 1)] + 1;
  }
}

// A lower-priority pod on the node searched: its entries in the node's holdings().
struct Victim {
  int pod = -1;
  std::int32_t priority = 0;
  std::uint32_t first = 0;
  std::uint32_t last = 0;
};

// One node's victims: Buffers::victims[first, first + count).
struct NodeVictims {
  int node = -1;
  std::size_t first = 0;
  int count = 0;
  std::int32_t lowest = 0;  // the lowest victim priority (when count > 0)
  // Whether evicting all of them gives the preemptor a place: -1 not yet known, 0 no, 1 yes.
  int drainable = -1;
  // When it does: the affinity it gets then, the best any subset of them can give.
  Affinity drained = Affinity::kCrossSocket;
};

}  // namespace

struct PreemptionWorkspace::Buffers {
  std::vector<Victim> victims;
  std::vector<NumaFree> scratch;
  std::vector<int> all, idx;
  std::vector<std::int32_t> priorities;
  std::vector<NodeVictims> reachable;
  std::vector<int> order, trial;  // default-k8s's reprieve
  std::vector<char> gone;
};

namespace {

// The work of one preemption decision: the victims of every node searched, and the evaluation of
// victim sets against the preemptor's request.
class Search {
 public:
  Search(const ClusterState& state, const Pod& preemptor, const PreemptionConfig& config,
         PreemptionWorkspace& workspace)
      : state_(state), pod_(preemptor), config_(config), b_(workspace.buffers()) {
    p_min_ =
        std::min(preemptor.priority, state.lowest_bound_priority().value_or(preemptor.priority));
    b_.victims.clear();
    b_.reachable.clear();
  }

  // Why the request cannot be searched; empty when it can.
  std::string check() const {
    if (auto st = validate(pod_); !st) return st.error().message();
    if (!std::isfinite(config_.alpha) || config_.alpha < 0 || config_.alpha > 1) {
      return fmt::format("alpha {} is outside [0, 1]", config_.alpha);
    }
    for (const double t : {config_.topology.same_numa, config_.topology.same_socket,
                           config_.topology.cross_socket}) {
      if (!std::isfinite(t) || t < 0) {
        return fmt::format("topology score {} is not a finite number >= 0", t);
      }
    }
    if (config_.max_victims < 0) {
      return fmt::format("max_victims {} is negative", config_.max_victims);
    }
    for (int i : config_.nodes) {
      if (i < 0 || at(i) >= state_.nodes().size()) {
        return fmt::format("node {} does not exist ({} nodes)", i, state_.nodes().size());
      }
    }
    return {};
  }

  // Calls f(i) for every node searched, in order. A decision reads every node's state (the line
  // that points to its topology, free counts and holdings), and its holdings and free counts,
  // each in its own allocation: on a large cluster each is a cache miss, so the state of the node
  // eight places ahead, and the holdings and free counts of the one four places ahead, are
  // fetched while this one is searched.
  // The nodes are config_.nodes, or every node when that is empty.
  template <typename F>
  void for_each_node(F&& f) {
    static constexpr std::size_t kAhead = 4;
    const bool all = config_.nodes.empty();
    const std::size_t n = all ? state_.nodes().size() : config_.nodes.size();
    const auto node_at = [&](std::size_t k) {
      return all ? static_cast<int>(k) : config_.nodes[k];
    };
    for (std::size_t k = 0; k < n; ++k) {
      if (k + 2 * kAhead < n) __builtin_prefetch(&state_.node(node_at(k + 2 * kAhead)));
      if (k + kAhead < n) {
        const NodeState& ahead = state_.node(node_at(k + kAhead));
        const Holding* hs = ahead.holdings().data();
        __builtin_prefetch(hs);
        __builtin_prefetch(hs + 2);
        __builtin_prefetch(ahead.free_per_numa().data());
      }
      f(node_at(k));
    }
  }

  // Node `i`'s victims: lower priority than the preemptor, ascending pod index.
  NodeVictims collect(int i) {
    ++nodes_examined_;
    const std::vector<Holding>& hs = state_.node(i).holdings();
    NodeVictims v;
    v.node = i;
    v.first = b_.victims.size();
    for (std::size_t k = 0; k < hs.size();) {
      std::size_t j = k + 1;
      while (j < hs.size() && hs[j].pod == hs[k].pod) ++j;
      if (hs[k].priority < pod_.priority) {
        b_.victims.push_back(Victim{hs[k].pod, hs[k].priority, static_cast<std::uint32_t>(k),
                                    static_cast<std::uint32_t>(j)});
      }
      k = j;
    }
    const auto begin = b_.victims.begin() + static_cast<std::ptrdiff_t>(v.first);
    const auto by_pod = [](const Victim& a, const Victim& b) { return a.pod < b.pod; };
    // Pods are taken in bind order, which is index order; sort only if a caller did otherwise.
    if (!std::is_sorted(begin, b_.victims.end(), by_pod)) {
      std::sort(begin, b_.victims.end(), by_pod);
    }
    v.count = static_cast<int>(b_.victims.size() - v.first);
    if (v.count > 0) {
      v.lowest = std::min_element(begin, b_.victims.end(), [](const Victim& a, const Victim& b) {
                   return a.priority < b.priority;
                 })->priority;
    }
    return v;
  }

  // Whether evicting every victim on v's node leaves the preemptor a place (an acceptable one, or
  // for `topology_blind` searches any one): the paper's "draining all victims" filter. A node that
  // fails it has no candidate, as more victims never leave less free. Evaluated once per node.
  bool drainable(NodeVictims& v, bool topology_blind) {
    if (v.drainable < 0) {
      b_.all.resize(at(v.count));
      std::iota(b_.all.begin(), b_.all.end(), 0);
      const auto drained = evaluate(v, b_.all);
      v.drainable = drained && (topology_blind || acceptable(pod_, *drained)) ? 1 : 0;
      if (drained) v.drained = *drained;
    }
    return v.drainable == 1;
  }

  // collect() and drainable(): the node's victims, or nullopt when draining them all is not enough.
  std::optional<NodeVictims> prepare(int i, bool topology_blind) {
    NodeVictims v = collect(i);
    if (!drainable(v, topology_blind)) {
      b_.victims.resize(v.first);
      return std::nullopt;
    }
    return v;
  }

  // The most S(C) any set of `k` of v's victims can reach: the k lowest priorities with topology
  // score `t` (the best there is, or the drained node's). A set whose bound cannot beat the best
  // candidate so far need not be evaluated.
  double level_bound(const NodeVictims& v, int k, double t) {
    // One victim, the incremental search's first size, at best the lowest priority.
    if (k == 1) return s_of(std::int64_t{v.lowest} - p_min_ + 1, t);
    b_.priorities.clear();
    for (int j = 0; j < v.count; ++j) b_.priorities.push_back(victim(v, j).priority);
    std::partial_sort(b_.priorities.begin(), b_.priorities.begin() + k, b_.priorities.end());
    std::int64_t shifted = 0;
    for (int j = 0; j < k; ++j) shifted += std::int64_t{b_.priorities[at(j)]} - p_min_ + 1;
    return s_of(shifted, t);
  }
  double set_bound(const NodeVictims& v, std::span<const int> set, double t) const {
    return s_of(shifted_sum(v, set), t);
  }
  // The topology score bounds use for v: the drained node's once known, else the best there is.
  double bound_topology(const NodeVictims& v) const {
    return v.drainable == 1 ? config_.topology.of(v.drained) : best_topology();
  }

  // The best affinity the preemptor gets on v's node with the victims at `set` (positions among
  // v's victims) gone.
  std::optional<Affinity> evaluate(const NodeVictims& v, std::span<const int> set) {
    ++sets_evaluated_;
    const NodeState& n = state_.node(v.node);
    if (set.empty()) return best_affinity(n.topology(), n.free_per_numa(), pod_.request);
    const std::vector<Holding>& hs = n.holdings();
    b_.scratch.assign(n.free_per_numa().begin(), n.free_per_numa().end());
    for (int k : set) {
      const Victim& out = victim(v, k);
      for (std::uint32_t h = out.first; h < out.last; ++h) {
        b_.scratch[at(hs[h].numa)] += hs[h].amount;
      }
    }
    return best_affinity(n.topology(), b_.scratch, pod_.request);
  }

  const Victim& victim(const NodeVictims& v, int k) const { return b_.victims[v.first + at(k)]; }
  int victim_pod(const NodeVictims& v, int k) const { return victim(v, k).pod; }

  // S(C) of the victims at `set` on v's node, the preemptor getting `affinity`.
  double score(const NodeVictims& v, std::span<const int> set, Affinity affinity) const {
    return s_of(shifted_sum(v, set), config_.topology.of(affinity));
  }

  PreemptionCandidate candidate(const NodeVictims& v, std::span<const int> set, Affinity affinity,
                                bool scored) const {
    PreemptionCandidate c;
    c.node = v.node;
    c.affinity = affinity;
    for (int k : set) {
      const int p = victim_pod(v, k);
      c.victims.push_back(p);
      c.priority_sum += state_.pod(p).pod.priority;
    }
    if (scored) c.score = score(v, set, affinity);
    return c;
  }

  // The kDefaultK8s victims on v's node: all of them gone, then each reprieved, most important
  // first (higher priority, then earlier start), while the preemptor still fits by counts.
  // Called on a node that passed drainable(v, true).
  std::optional<PreemptionCandidate> k8s_victims(const NodeVictims& v) {
    std::vector<int>& order = b_.order;
    order.resize(at(v.count));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Pod& pa = state_.pod(victim_pod(v, a)).pod;
      const Pod& pb = state_.pod(victim_pod(v, b)).pod;
      if (pa.priority != pb.priority) return pa.priority > pb.priority;
      return pa.start_seq < pb.start_seq;
    });
    std::vector<char>& gone = b_.gone;
    gone.assign(at(v.count), 1);
    std::vector<int>& trial = b_.trial;
    Affinity fits = v.drained;  // where the preemptor goes with the victims still gone
    for (int k : order) {
      gone[at(k)] = 0;
      trial.clear();
      for (int j = 0; j < v.count; ++j) {
        if (gone[at(j)]) trial.push_back(j);
      }
      if (const auto a = evaluate(v, trial)) {
        fits = *a;
      } else {
        gone[at(k)] = 1;
      }
    }
    trial.clear();
    for (int j = 0; j < v.count; ++j) {
      if (gone[at(j)]) trial.push_back(j);
    }
    return candidate(v, trial, fits, false);
  }

  // The most S(C) one victim of priority `lowest` can reach on any node.
  double one_victim_bound(std::int32_t lowest) const {
    return s_of(std::int64_t{lowest} - p_min_ + 1, best_topology());
  }
  // Forgets the nodes collected so far (a search that starts over).
  void restart() {
    b_.victims.clear();
    b_.reachable.clear();
  }

  const ClusterState& state() const { return state_; }
  const Pod& pod() const { return pod_; }
  const PreemptionConfig& config() const { return config_; }
  std::int64_t nodes_examined() const { return nodes_examined_; }
  std::int64_t sets_evaluated() const { return sets_evaluated_; }
  std::vector<int>& idx() { return b_.idx; }
  std::vector<NodeVictims>& reachable() { return b_.reachable; }

 private:
  std::int64_t shifted_sum(const NodeVictims& v, std::span<const int> set) const {
    std::int64_t shifted = 0;
    for (int k : set) shifted += std::int64_t{victim(v, k).priority} - p_min_ + 1;
    return shifted;
  }
  // S from the shifted priority sum and T. Monotone in T in floating point too, so a bound built
  // with the best T is never below the S it bounds.
  double s_of(std::int64_t shifted, double t) const {
    // P of no victims is 1, the most any set gets: evicting nothing costs nothing.
    const double p = shifted == 0 ? 1.0 : 1.0 / static_cast<double>(shifted);
    return config_.alpha * p + (1 - config_.alpha) * t;
  }
  double best_topology() const {
    const TopologyScores& t = config_.topology;
    return std::max({t.same_numa, t.same_socket, t.cross_socket});
  }

  const ClusterState& state_;
  const Pod& pod_;
  const PreemptionConfig& config_;
  PreemptionWorkspace::Buffers& b_;
  std::int32_t p_min_ = 0;
  std::int64_t nodes_examined_ = 0;
  std::int64_t sets_evaluated_ = 0;
};

// Whether a beats b for FlexTopo's searches: meets the preemptor's requirement (decides only for
// best-effort pods; guaranteed ones meet it always), then S(C), then (exhaustive) fewer victims.
// Equal ones keep the one found first, the lower node index, then the lower victims, unless
// `a_on_earlier_node`: a was found after b, out of node order, on a lower node.
bool better(const Pod& pod, Affinity a, double score_a, std::size_t size_a, Affinity b,
            double score_b, std::size_t size_b, bool fewer_victims,
            bool a_on_earlier_node = false) {
  const bool ma = satisfies(a, pod.topology);
  const bool mb = satisfies(b, pod.topology);
  if (ma != mb) return ma;
  if (score_a != score_b) return score_a > score_b;
  if (fewer_victims && size_a != size_b) return size_a < size_b;
  return size_a == size_b && a_on_earlier_node;
}

bool better(const Pod& pod, const PreemptionCandidate& a, const PreemptionCandidate& b,
            bool fewer_victims) {
  return better(pod, a.affinity, a.score, a.victims.size(), b.affinity, b.score, b.victims.size(),
                fewer_victims);
}

// kube-scheduler's pickOneNodeForPreemption, less PDBs: lowest highest-victim priority, lowest
// offset priority sum, fewest victims, latest earliest-start among the highest-priority victims.
struct K8sKey {
  std::int32_t highest = std::numeric_limits<std::int32_t>::min();
  std::int64_t sum = 0;
  std::size_t count = 0;
  std::int64_t earliest_start_of_highest = std::numeric_limits<std::int64_t>::max();
};

K8sKey k8s_key(const ClusterState& state, const PreemptionCandidate& c) {
  K8sKey k;
  k.count = c.victims.size();
  for (int p : c.victims) {
    const Pod& v = state.pod(p).pod;
    k.sum += kK8sPriorityOffset + v.priority;
    if (v.priority > k.highest) {
      k.highest = v.priority;
      k.earliest_start_of_highest = v.start_seq;
    } else if (v.priority == k.highest) {
      k.earliest_start_of_highest = std::min(k.earliest_start_of_highest, v.start_seq);
    }
  }
  return k;
}

bool k8s_better(const K8sKey& a, const K8sKey& b) {
  if (a.count == 0 || b.count == 0) return a.count == 0 && b.count != 0;
  if (a.highest != b.highest) return a.highest < b.highest;
  if (a.sum != b.sum) return a.sum < b.sum;
  if (a.count != b.count) return a.count < b.count;
  return a.earliest_start_of_highest > b.earliest_start_of_highest;
}

// `searched`: the nodes the search that found nothing went through.
std::string no_candidate_reason(const Search& s, PreemptionMethod m, std::int64_t searched,
                                std::int64_t pruned) {
  const Pod& pod = s.pod();
  const std::string where =
      m == PreemptionMethod::kDefaultK8s || pod.qos == Qos::kBestEffort
          ? std::string("room")
          : fmt::format("room within one {}",
                        pod.topology == TopologyRequirement::kNuma ? "NUMA node" : "socket");
  std::string text = fmt::format(
      "no node where evicting pods of priority below {} makes {} for pod '{}' ({} GPUs, {} CPU "
      "cores, {} bytes): {} nodes examined, {} of them out of reach even with all their "
      "lower-priority pods evicted",
      pod.priority, where, pod.name, pod.request.gpus, pod.request.cpus, pod.request.memory_bytes,
      searched, pruned);
  if (m != PreemptionMethod::kDefaultK8s && pruned < searched) {
    text +=
        fmt::format("; the others need more than max_victims = {} victims", s.config().max_victims);
  }
  return text;
}

PreemptionDecision run_flextopo(Search& s, PreemptionMethod method) {
  PreemptionDecision d;
  std::vector<NodeVictims>& nodes = s.reachable();
  const bool exhaustive = method == PreemptionMethod::kExhaustive;
  const Pod& pod = s.pod();
  std::optional<PreemptionCandidate> best;
  // Nodes are searched in index order, so among equal candidates the first found, on the lowest
  // node, wins. The search from the lowest victim priority visits nodes out of that order, and
  // then an equal candidate on a lower node wins.
  bool out_of_order = false;
  const auto earlier_node = [&](int node) { return out_of_order && node < best->node; };
  // Whether a set of `size` victims on `node` with S at most `bound` could still replace the
  // best: exact pruning (branch and bound), so the choice is the one a full search makes.
  const auto can_beat = [&](double bound, std::size_t size, int node) {
    if (!s.config().prune || !best || !satisfies(best->affinity, pod.topology)) return true;
    if (bound != best->score) return bound > best->score;
    if (exhaustive && size != best->victims.size()) return size < best->victims.size();
    return earlier_node(node);
  };
  const auto consider = [&](NodeVictims& v, std::span<const int> set) {
    if (!can_beat(s.set_bound(v, set, s.bound_topology(v)), set.size(), v.node)) return;
    if (!set.empty() && !s.drainable(v, false)) return;
    const auto affinity = s.evaluate(v, set);
    if (!affinity || !acceptable(pod, *affinity)) return;
    // The candidate is built (allocating its victim list) only when it wins.
    const double score = s.score(v, set, *affinity);
    if (!best || better(pod, *affinity, score, set.size(), best->affinity, best->score,
                        best->victims.size(), exhaustive, earlier_node(v.node))) {
      best = s.candidate(v, set, *affinity, true);
    }
  };
  const auto level = [&](NodeVictims& v, int k) {
    if (k > v.count || v.drainable == 0) return;
    if (k > 0) {
      // First with the best topology score there is; if that could win, drain the node (once)
      // and bound again with what the node can give at best.
      if (!can_beat(s.level_bound(v, k, s.bound_topology(v)), at(k), v.node)) return;
      if (!s.drainable(v, false)) return;
      if (!can_beat(s.level_bound(v, k, s.bound_topology(v)), at(k), v.node)) return;
    }
    for_each_combination(v.count, k, s.idx(), [&](std::span<const int> set) { consider(v, set); });
  };
  const auto decided = [&] {
    d.status = best ? DecisionStatus::kChosen : DecisionStatus::kInfeasible;
    d.chosen = std::move(best);
    d.nodes_examined = s.nodes_examined();
    d.sets_evaluated = s.sets_evaluated();
  };
  // Where no node takes the preemptor as it is, every candidate has victims, and none on a node
  // whose lowest victim priority is p scores more than one_victim_bound(p), which falls as p
  // rises. So nodes are visited from the lowest victim priority up until no node left can reach
  // the best found; one that could only tie it matters only where it could win the tie (a lower
  // node; for the exhaustive search, also fewer victims than the best's). The incremental
  // search's answer is then its best single victim, if any node has one; the exhaustive search
  // weighs every size on each node visited. Without a candidate the full search runs.
  const PreemptionConfig& c = s.config();
  if (c.placement_failed && c.prune && c.nodes.empty() && c.max_victims > 0) {
    out_of_order = true;
    const int sizes = exhaustive ? c.max_victims : 1;
    const auto& order = s.state().nodes_by_lowest_priority();
    for (auto it = order.begin(); it != order.end() && it->first < pod.priority;) {
      const auto [lowest, node] = *it;
      const double bound = s.one_victim_bound(lowest);
      if (best && satisfies(best->affinity, pod.topology) && bound <= best->score) {
        if (bound < best->score) break;
        // The rest of this priority are later nodes, whose best ties at one victim at most.
        if (node > best->node && best->victims.size() == 1) {
          it = order.lower_bound({lowest + 1, std::numeric_limits<int>::min()});
          continue;
        }
      }
      nodes.push_back(s.collect(node));
      for (int k = 1; k <= sizes; ++k) level(nodes.back(), k);
      ++it;
    }
    out_of_order = false;
    if (best) {
      decided();
      return d;
    }
    s.restart();
  }
  // Size 0 (the node as it is) and, where that fails, the drain while collecting each node's
  // victims, with its data in cache: a second pass over thousands of nodes to drain them for the
  // bounds would read it all from memory again.
  s.for_each_node([&](int i) {
    nodes.push_back(s.collect(i));
    NodeVictims& v = nodes.back();
    level(v, 0);
    // (Incremental: no point once a node fits as it is; the search ends at size 0.)
    if ((exhaustive || !best) && v.count > 0 && s.config().max_victims > 0) {
      s.drainable(v, false);
    }
  });
  if (exhaustive) {
    for (NodeVictims& v : nodes) {
      for (int k = 1; k <= s.config().max_victims; ++k) level(v, k);
    }
  } else {
    // Incremental Minimal Preemption: every node at size k before any at k + 1.
    for (int k = 1; k <= s.config().max_victims && !best; ++k) {
      for (NodeVictims& v : nodes) level(v, k);
    }
  }
  decided();
  if (!d.chosen) {
    // Out of reach: draining all victims is not enough (a node with none: as it is).
    const auto out = std::count_if(nodes.begin(), nodes.end(), [](const NodeVictims& v) {
      return v.drainable == 0 || v.count == 0;
    });
    d.reason = no_candidate_reason(s, method, static_cast<std::int64_t>(nodes.size()),
                                   static_cast<std::int64_t>(out));
  }
  return d;
}

PreemptionDecision run_k8s(const ClusterState& state, Search& s) {
  PreemptionDecision d;
  std::optional<PreemptionCandidate> best;
  std::optional<K8sKey> best_key;
  std::int64_t pruned = 0;
  s.for_each_node([&](int i) {
    const auto v = s.prepare(i, true);
    if (!v) {
      ++pruned;
      return;
    }
    auto c = s.k8s_victims(*v);
    if (!c) return;
    const K8sKey key = k8s_key(state, *c);
    if (!best || k8s_better(key, *best_key)) {
      best = std::move(c);
      best_key = key;
    }
  });
  d.status = best ? DecisionStatus::kChosen : DecisionStatus::kInfeasible;
  d.chosen = std::move(best);
  d.nodes_examined = s.nodes_examined();
  d.sets_evaluated = s.sets_evaluated();
  if (!d.chosen) {
    d.reason = no_candidate_reason(s, PreemptionMethod::kDefaultK8s, s.nodes_examined(), pruned);
  }
  return d;
}

}  // namespace

double TopologyScores::of(Affinity a) const {
  switch (a) {
    case Affinity::kSameNuma: return same_numa;
    case Affinity::kSameSocket: return same_socket;
    case Affinity::kCrossSocket: return cross_socket;
  }
  return 0;
}

TopologyScores for_penalties(double socket, double cross) {
  TopologyScores t;
  t.same_numa = 1.0;
  t.same_socket = 1.0 / socket;
  t.cross_socket = 1.0 / cross;
  return t;
}

PreemptionWorkspace::PreemptionWorkspace() = default;
PreemptionWorkspace::~PreemptionWorkspace() = default;
PreemptionWorkspace::PreemptionWorkspace(PreemptionWorkspace&&) noexcept = default;
PreemptionWorkspace& PreemptionWorkspace::operator=(PreemptionWorkspace&&) noexcept = default;

PreemptionWorkspace::Buffers& PreemptionWorkspace::buffers() {
  if (!buffers_) buffers_ = std::make_unique<Buffers>();
  return *buffers_;
}

PreemptionDecision preempt(const ClusterState& state, const Pod& preemptor, PreemptionMethod method,
                           const PreemptionConfig& config, PreemptionWorkspace& workspace) {
  Search s(state, preemptor, config, workspace);
  if (std::string why = s.check(); !why.empty()) {
    PreemptionDecision d;
    d.status = DecisionStatus::kInvalid;
    d.reason = std::move(why);
    return d;
  }
  if (method == PreemptionMethod::kDefaultK8s) return run_k8s(state, s);
  return run_flextopo(s, method);
}

PreemptionDecision preempt(const ClusterState& state, const Pod& preemptor, PreemptionMethod method,
                           const PreemptionConfig& config) {
  PreemptionWorkspace workspace;
  return preempt(state, preemptor, method, config, workspace);
}

core::Result<std::vector<PreemptionCandidate>> node_candidates(const ClusterState& state,
                                                               const Pod& preemptor, int node,
                                                               PreemptionMethod method,
                                                               const PreemptionConfig& config) {
  PreemptionConfig one = config;
  one.nodes = {node};
  PreemptionWorkspace workspace;
  Search s(state, preemptor, one, workspace);
  if (std::string why = s.check(); !why.empty()) {
    return core::fail(core::Domain::kCluster, core::Code::kInvalidArgument, std::move(why));
  }
  const bool k8s = method == PreemptionMethod::kDefaultK8s;
  const auto v = s.prepare(node, k8s);
  std::vector<PreemptionCandidate> out;
  if (!v) return out;
  if (k8s) {
    if (auto c = s.k8s_victims(*v)) out.push_back(std::move(*c));
    return out;
  }
  const bool exhaustive = method == PreemptionMethod::kExhaustive;
  for (int k = 0; k <= std::min(v->count, config.max_victims); ++k) {
    for_each_combination(v->count, k, s.idx(), [&](std::span<const int> set) {
      const auto affinity = s.evaluate(*v, set);
      if (affinity && acceptable(preemptor, *affinity)) {
        out.push_back(s.candidate(*v, set, *affinity, true));
      }
    });
    if (!exhaustive && !out.empty()) break;
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](const PreemptionCandidate& a, const PreemptionCandidate& b) {
                     return better(preemptor, a, b, exhaustive);
                   });
  return out;
}

}  // namespace tessera::cluster
