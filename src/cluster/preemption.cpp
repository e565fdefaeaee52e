#include "tessera/cluster/preemption.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

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

void add(NumaFree& sum, const NumaFree& f) {
  sum.gpus += f.gpus;
  sum.core_groups += f.core_groups;
  sum.cores += f.cores;
  sum.memory_bytes += f.memory_bytes;
}

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

// One node's lower-priority pods and what each would give back per NUMA node.
struct NodeVictims {
  int node = -1;
  std::size_t first = 0;  // offset into Search::victims_
  int count = 0;
};

// The work of one preemption decision: the victims of every node searched, flattened into
// buffers that are reused for each victim set evaluated.
class Search {
 public:
  Search(const ClusterState& state, const Pod& preemptor, const PreemptionConfig& config)
      : state_(state), pod_(preemptor), config_(config) {
    p_min_ = preemptor.priority;
    for (const NodeState& n : state.nodes()) {
      for (int p : n.pods()) p_min_ = std::min(p_min_, state.pod(p).pod.priority);
    }
  }

  // Why the request cannot be searched; empty when it can.
  std::string check() const {
    if (auto st = validate(pod_); !st) return st.error().message();
    if (!std::isfinite(config_.alpha) || config_.alpha < 0 || config_.alpha > 1) {
      return fmt::format("alpha {} is outside [0, 1]", config_.alpha);
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

  std::vector<int> nodes() const {
    if (!config_.nodes.empty()) return config_.nodes;
    std::vector<int> all(state_.nodes().size());
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

  // Collects node `i`'s victims (lower priority, ascending pod index). Returns them, or nullopt
  // when even evicting all of them leaves no place for the preemptor (acceptable one, or for
  // `topology_blind` searches any one): the paper's "draining all victims" filter.
  std::optional<NodeVictims> prepare(int i, bool topology_blind) {
    ++nodes_examined_;
    const NodeState& n = state_.node(i);
    const std::size_t numa = n.free_per_numa().size();
    NodeVictims v;
    v.node = i;
    v.first = victims_.size();
    for (int p : n.pods()) {
      if (state_.pod(p).pod.priority < pod_.priority) victims_.push_back(p);
    }
    std::sort(victims_.begin() + static_cast<std::ptrdiff_t>(v.first), victims_.end());
    v.count = static_cast<int>(victims_.size() - v.first);
    gives_.resize(victims_.size() * numa);
    const hw::HostTopology& t = n.topology();
    for (int k = 0; k < v.count; ++k) {
      NumaFree* g = &gives_[(v.first + at(k)) * numa];
      std::fill(g, g + numa, NumaFree{});
      const Assignment& a = state_.pod(victims_[v.first + at(k)]).assignment;
      for (int gpu : a.gpus) ++g[at(t.gpu(gpu).numa)].gpus;
      for (int cg : a.core_groups) {
        ++g[at(t.core_group(cg).numa)].core_groups;
        g[at(t.core_group(cg).numa)].cores += t.core_group(cg).cores;
      }
      for (const Assignment::Memory& m : a.memory) g[at(m.numa)].memory_bytes += m.bytes;
    }
    all_.resize(at(v.count));
    std::iota(all_.begin(), all_.end(), 0);
    const auto drained = evaluate(v, all_);
    if (!drained || (!topology_blind && !acceptable(pod_, *drained))) {
      victims_.resize(v.first);
      gives_.resize(victims_.size() * numa);
      return std::nullopt;
    }
    return v;
  }

  // The best affinity the preemptor gets on v's node with the victims at `set` (positions among
  // v's victims) gone.
  std::optional<Affinity> evaluate(const NodeVictims& v, std::span<const int> set) {
    ++sets_evaluated_;
    const NodeState& n = state_.node(v.node);
    const auto& base = n.free_per_numa();
    const std::size_t numa = base.size();
    scratch_.assign(base.begin(), base.end());
    for (int k : set) {
      const NumaFree* g = &gives_[(v.first + at(k)) * numa];
      for (std::size_t j = 0; j < numa; ++j) add(scratch_[j], g[j]);
    }
    return best_affinity(n.topology(), scratch_, pod_.request);
  }

  // S(C) of the victims at `set` on v's node, the preemptor getting `affinity`.
  double score(const NodeVictims& v, std::span<const int> set, Affinity affinity) const {
    std::int64_t shifted = 0;
    for (int k : set) {
      shifted += std::int64_t{state_.pod(victims_[v.first + at(k)]).pod.priority} - p_min_ + 1;
    }
    // P of no victims is 1, the most any set gets: evicting nothing costs nothing.
    const double p = shifted == 0 ? 1.0 : 1.0 / static_cast<double>(shifted);
    return config_.alpha * p + (1 - config_.alpha) * config_.topology.of(affinity);
  }

  PreemptionCandidate candidate(const NodeVictims& v, std::span<const int> set, Affinity affinity,
                                bool scored) const {
    PreemptionCandidate c;
    c.node = v.node;
    c.affinity = affinity;
    for (int k : set) {
      const int p = victims_[v.first + at(k)];
      c.victims.push_back(p);
      c.priority_sum += state_.pod(p).pod.priority;
    }
    if (scored) c.score = score(v, set, affinity);
    return c;
  }

  // The kDefaultK8s victims on v's node: all of them gone, then each reprieved, most important
  // first (higher priority, then earlier start), while the preemptor still fits by counts.
  std::optional<PreemptionCandidate> k8s_victims(const NodeVictims& v) {
    std::vector<int> order(at(v.count));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Pod& pa = state_.pod(victims_[v.first + at(a)]).pod;
      const Pod& pb = state_.pod(victims_[v.first + at(b)]).pod;
      if (pa.priority != pb.priority) return pa.priority > pb.priority;
      return pa.start_seq < pb.start_seq;
    });
    std::vector<int> gone = order;
    for (int k : order) {
      std::vector<int> trial;
      for (int g : gone) {
        if (g != k) trial.push_back(g);
      }
      std::sort(trial.begin(), trial.end());
      if (evaluate(v, trial)) gone = std::move(trial);
    }
    std::sort(gone.begin(), gone.end());
    const auto affinity = evaluate(v, gone);
    if (!affinity) return std::nullopt;
    return candidate(v, gone, *affinity, false);
  }

  const Pod& pod() const { return pod_; }
  const PreemptionConfig& config() const { return config_; }
  std::int64_t nodes_examined() const { return nodes_examined_; }
  std::int64_t sets_evaluated() const { return sets_evaluated_; }
  std::vector<int>& idx() { return idx_; }

 private:
  const ClusterState& state_;
  const Pod& pod_;
  const PreemptionConfig& config_;
  std::int32_t p_min_ = 0;
  std::vector<int> victims_;     // pod indices, node by node
  std::vector<NumaFree> gives_;  // per victim, per NUMA node of its node
  std::vector<NumaFree> scratch_;
  std::vector<int> all_, idx_;
  std::int64_t nodes_examined_ = 0;
  std::int64_t sets_evaluated_ = 0;
};

// Whether a beats b for FlexTopo's searches: meets the preemptor's requirement (decides only for
// best-effort pods; guaranteed ones meet it always), then S(C), then (exhaustive) fewer victims.
// Equal ones keep the one found first: the lower node index, then the lower victims.
bool better(const Pod& pod, Affinity a, double score_a, std::size_t size_a, Affinity b,
            double score_b, std::size_t size_b, bool fewer_victims) {
  const bool ma = satisfies(a, pod.topology);
  const bool mb = satisfies(b, pod.topology);
  if (ma != mb) return ma;
  if (score_a != score_b) return score_a > score_b;
  if (fewer_victims) return size_a < size_b;
  return false;
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

std::string no_candidate_reason(const Search& s, PreemptionMethod m, std::int64_t pruned) {
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
      s.nodes_examined(), pruned);
  if (m != PreemptionMethod::kDefaultK8s && pruned < s.nodes_examined()) {
    text +=
        fmt::format("; the others need more than max_victims = {} victims", s.config().max_victims);
  }
  return text;
}

PreemptionDecision run_flextopo(Search& s, PreemptionMethod method) {
  PreemptionDecision d;
  std::vector<NodeVictims> reachable;
  std::int64_t pruned = 0;
  for (int i : s.nodes()) {
    if (auto v = s.prepare(i, false)) {
      reachable.push_back(*v);
    } else {
      ++pruned;
    }
  }
  const bool exhaustive = method == PreemptionMethod::kExhaustive;
  std::optional<PreemptionCandidate> best;
  const auto consider = [&](const NodeVictims& v, std::span<const int> set) {
    const auto affinity = s.evaluate(v, set);
    if (!affinity || !acceptable(s.pod(), *affinity)) return;
    // The candidate is built (allocating its victim list) only when it wins.
    const double score = s.score(v, set, *affinity);
    if (!best || better(s.pod(), *affinity, score, set.size(), best->affinity, best->score,
                        best->victims.size(), exhaustive)) {
      best = s.candidate(v, set, *affinity, true);
    }
  };
  if (exhaustive) {
    for (const NodeVictims& v : reachable) {
      for (int k = 0; k <= std::min(v.count, s.config().max_victims); ++k) {
        for_each_combination(v.count, k, s.idx(),
                             [&](std::span<const int> set) { consider(v, set); });
      }
    }
  } else {
    // Incremental Minimal Preemption: every node at size k before any at k + 1.
    for (int k = 0; k <= s.config().max_victims && !best; ++k) {
      for (const NodeVictims& v : reachable) {
        for_each_combination(v.count, k, s.idx(),
                             [&](std::span<const int> set) { consider(v, set); });
      }
    }
  }
  d.chosen = std::move(best);
  d.nodes_examined = s.nodes_examined();
  d.sets_evaluated = s.sets_evaluated();
  if (!d.chosen) d.reason = no_candidate_reason(s, method, pruned);
  return d;
}

PreemptionDecision run_k8s(const ClusterState& state, Search& s) {
  PreemptionDecision d;
  std::optional<PreemptionCandidate> best;
  std::optional<K8sKey> best_key;
  std::int64_t pruned = 0;
  for (int i : s.nodes()) {
    const auto v = s.prepare(i, true);
    if (!v) {
      ++pruned;
      continue;
    }
    auto c = s.k8s_victims(*v);
    if (!c) continue;
    const K8sKey key = k8s_key(state, *c);
    if (!best || k8s_better(key, *best_key)) {
      best = std::move(c);
      best_key = key;
    }
  }
  d.chosen = std::move(best);
  d.nodes_examined = s.nodes_examined();
  d.sets_evaluated = s.sets_evaluated();
  if (!d.chosen) d.reason = no_candidate_reason(s, PreemptionMethod::kDefaultK8s, pruned);
  return d;
}

}  // namespace

std::string_view to_string(PreemptionMethod m) {
  switch (m) {
    case PreemptionMethod::kIncremental: return "incremental";
    case PreemptionMethod::kExhaustive: return "exhaustive";
    case PreemptionMethod::kDefaultK8s: return "default-k8s";
  }
  return "?";
}

core::Result<PreemptionMethod> parse_preemption_method(std::string_view s) {
  if (s == "incremental") return PreemptionMethod::kIncremental;
  if (s == "exhaustive") return PreemptionMethod::kExhaustive;
  if (s == "default-k8s") return PreemptionMethod::kDefaultK8s;
  return core::failf(core::Domain::kCluster, core::Code::kInvalidArgument,
                     "preemption method '{}': expected incremental, exhaustive or default-k8s", s);
}

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

PreemptionDecision preempt(const ClusterState& state, const Pod& preemptor, PreemptionMethod method,
                           const PreemptionConfig& config) {
  Search s(state, preemptor, config);
  if (std::string why = s.check(); !why.empty()) {
    PreemptionDecision d;
    d.reason = std::move(why);
    return d;
  }
  if (method == PreemptionMethod::kDefaultK8s) return run_k8s(state, s);
  return run_flextopo(s, method);
}

std::vector<PreemptionCandidate> node_candidates(const ClusterState& state, const Pod& preemptor,
                                                 int node, PreemptionMethod method,
                                                 const PreemptionConfig& config) {
  PreemptionConfig one = config;
  one.nodes = {node};
  Search s(state, preemptor, one);
  if (!s.check().empty()) return {};
  const bool k8s = method == PreemptionMethod::kDefaultK8s;
  const auto v = s.prepare(node, k8s);
  if (!v) return {};
  std::vector<PreemptionCandidate> out;
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
