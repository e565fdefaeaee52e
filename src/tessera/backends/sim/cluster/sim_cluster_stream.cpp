// The paper's protocol (FlexTopo, arXiv 2411.11560, §5: preemptions on a saturated cluster):
// build_saturated_cluster and run_preemption_stream, plus the helpers the scenario simulator
// shares.

#include <algorithm>
#include <cmath>

#include "tessera/backends/sim/cluster/internal/sim_cluster_util.hpp"
#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/presets.hpp"

namespace tessera::sim {

namespace detail {

const PodClass& draw_class(std::span<const PodClass> classes, core::RandomStream& rng) {
  double total = 0;
  for (const auto& c : classes) total += c.weight;
  double x = rng.uniform(0.0, total);
  for (const auto& c : classes) {
    if (x < c.weight) return c;
    x -= c.weight;
  }
  return classes.back();  // x == total after rounding
}

cluster::Pod make_pod(const PodClass& c, std::string name, std::int64_t start_seq) {
  cluster::Pod p;
  p.uid = name;
  p.name = std::move(name);
  p.priority = c.priority;
  p.qos = c.qos;
  p.request = c.request;
  p.topology = c.topology;
  p.start_seq = start_seq;
  return p;
}

bool fits_empty(const std::shared_ptr<const hw::HostTopology>& topology, const cluster::Pod& pod) {
  const cluster::NodeState empty("empty", topology);
  const auto a = cluster::best_affinity(*topology, empty.free_per_numa(), pod.request);
  return a && cluster::acceptable(pod, *a);
}

cluster::Pod placement_view(const cluster::Pod& pod, cluster::PreemptionMethod method) {
  if (method != cluster::PreemptionMethod::kDefaultK8s) return pod;
  cluster::Pod blind = pod;
  blind.qos = cluster::Qos::kBestEffort;
  blind.topology = cluster::TopologyRequirement::kNone;
  return blind;
}

cluster::PlacementDecision place_for(const cluster::ClusterState& state, const cluster::Pod& pod,
                                     cluster::PreemptionMethod method) {
  return cluster::place(state, placement_view(pod, method));
}

core::Status refuse_invalid(cluster::DecisionStatus status, const cluster::Pod& pod,
                            const std::string& reason) {
  if (status != cluster::DecisionStatus::kInvalid) return {};
  return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                     "pod '{}' cannot be scheduled: {}", pod.name, reason);
}

void record_victims(const cluster::ClusterState& state, std::span<const int> victims,
                    PreemptionRecord& rec) {
  for (int v : victims) {
    const auto& bp = state.pod(v);
    rec.victims.push_back(bp.pod.name);
    rec.victim_priorities.push_back(bp.pod.priority);
    rec.victim_gpus += bp.pod.request.gpus;
  }
}

PreemptionRecord start_record(const cluster::Pod& pod, const std::string& pod_class,
                              cluster::PreemptionMethod method) {
  PreemptionRecord r;
  r.preemptor = pod.name;
  r.preemptor_class = pod_class;
  r.priority = pod.priority;
  r.qos = pod.qos;
  r.requirement = pod.topology;
  r.request = pod.request;
  r.method = method;
  return r;
}

core::Result<int> bind_recorded(cluster::ClusterState& state, const cluster::Pod& pod,
                                const cluster::Placement& placement, PreemptionRecord& rec) {
  TESSERA_ASSIGN_OR_RETURN(const int index, state.bind(pod, placement.node, placement.assignment));
  rec.placed = true;
  rec.node = placement.node;
  rec.node_name = state.node(placement.node).name();
  rec.assignment = placement.assignment;
  rec.affinity = placement.assignment.affinity;
  rec.hit = cluster::satisfies(placement.assignment.affinity, pod.topology);
  return index;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace detail

namespace {

core::Status check_classes(std::span<const PodClass> classes, std::string_view field) {
  if (classes.empty()) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "{}: no pod classes; give at least one", field);
  }
  for (const auto& c : classes) {
    if (!(c.weight > 0)) {
      return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                         "{}: class '{}' has weight {}; weights must be > 0", field, c.name,
                         c.weight);
    }
  }
  return {};
}

int allocated_gpus(const cluster::ClusterState& state) {
  int n = 0;
  for (const auto& node : state.nodes()) {
    for (int owner : node.gpu_owner()) n += owner >= 0 ? 1 : 0;
  }
  return n;
}

// Binds one pod of class `c` on a node drawn uniformly among those where it fits acceptably.
// False when it fits nowhere.
core::Result<bool> place_random(cluster::ClusterState& state, const PodClass& c, std::int64_t& seq,
                                core::RandomStream& rng) {
  cluster::Pod pod = detail::make_pod(c, fmt::format("fill-{}-{}", c.name, seq), seq);
  ++seq;
  std::vector<int> fits;
  for (const auto& v : cluster::filter_nodes(state, pod)) {
    if (v.fits && v.affinity && cluster::acceptable(pod, *v.affinity)) fits.push_back(v.node);
  }
  if (fits.empty()) return false;
  const int node = fits[rng.below(fits.size())];
  auto a = cluster::best_assignment(state.node(node), pod.request);
  if (!a) {
    return core::failf(core::Domain::kSim, core::Code::kInternal,
                       "node {} was filtered as fitting pod '{}' but has no assignment for it",
                       state.node(node).name(), pod.name);
  }
  TESSERA_TRY(state.bind(std::move(pod), node, *a));
  return true;
}

// Draws from `fill` until `target` GPUs are held or `kMaxMisses` draws in a row fit nowhere.
core::Status fill_to(cluster::ClusterState& state, const SaturationSpec& spec, int target,
                     std::int64_t& seq, core::RandomStream& rng) {
  // ASSUMPTION: 200 consecutive draws that fit nowhere means the mix cannot fill further; with
  // the smallest class's share of the mix at 1/10 that is a miss by chance below 1e-9.
  constexpr int kMaxMisses = 200;
  int misses = 0;
  while (allocated_gpus(state) < target && misses < kMaxMisses) {
    TESSERA_ASSIGN_OR_RETURN(const bool ok,
                             place_random(state, detail::draw_class(spec.fill, rng), seq, rng));
    misses = ok ? 0 : misses + 1;
  }
  if (spec.gpu_fill >= 1.0) {
    // The valleys: the smallest GPU class fills every hole left.
    const PodClass* smallest = nullptr;
    for (const auto& c : spec.fill) {
      if (c.request.gpus > 0 && (!smallest || c.request.gpus < smallest->request.gpus)) {
        smallest = &c;
      }
    }
    if (smallest) {
      for (;;) {
        TESSERA_ASSIGN_OR_RETURN(const bool ok, place_random(state, *smallest, seq, rng));
        if (!ok) break;
      }
    }
  }
  return {};
}

}  // namespace

core::Result<cluster::ClusterState> build_saturated_cluster(const SaturationSpec& spec,
                                                            std::uint64_t seed) {
  if (spec.nodes < 1 || spec.nodes > 100'000) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "saturation.nodes = {}: need 1 to 100000 nodes", spec.nodes);
  }
  if (!(spec.gpu_fill > 0 && spec.gpu_fill <= 1)) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "saturation.gpu_fill = {}: need a fraction in (0, 1]", spec.gpu_fill);
  }
  if (spec.churn_rounds < 0 || !(spec.churn_fraction >= 0 && spec.churn_fraction <= 1)) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "saturation: churn_rounds = {} and churn_fraction = {}: need rounds >= 0 "
                       "and a fraction in [0, 1]",
                       spec.churn_rounds, spec.churn_fraction);
  }
  TESSERA_TRY(check_classes(spec.fill, "saturation.fill"));
  TESSERA_ASSIGN_OR_RETURN(auto topo, hw::preset(spec.preset, spec.preset));
  auto topology = std::make_shared<const hw::HostTopology>(std::move(topo));
  for (const auto& c : spec.fill) {
    if (!detail::fits_empty(topology, detail::make_pod(c, c.name, 0))) {
      return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                         "saturation.fill: class '{}' ({} GPUs, {} cores, topology {}) does not "
                         "fit an empty {} node; shrink it or drop its topology requirement",
                         c.name, c.request.gpus, c.request.cpus, cluster::to_string(c.topology),
                         spec.preset);
    }
  }
  cluster::ClusterState state;
  for (int i = 0; i < spec.nodes; ++i) {
    TESSERA_TRY(state.add_node(fmt::format("node-{}", i), topology));
  }
  const int total = spec.nodes * static_cast<int>(topology->gpus().size());
  const int target = static_cast<int>(std::ceil(spec.gpu_fill * total));
  core::RandomStreams streams(seed);
  core::RandomStream rng = streams.stream("saturation/fill");
  core::RandomStream churn = streams.stream("saturation/churn");
  std::int64_t seq = 0;
  TESSERA_TRY(fill_to(state, spec, target, seq, rng));
  for (int round = 0; round < spec.churn_rounds; ++round) {
    for (int i = 0; i < static_cast<int>(state.pods().size()); ++i) {
      if (state.pod(i).node >= 0 && churn.uniform01() < spec.churn_fraction) state.evict(i);
    }
    TESSERA_TRY(fill_to(state, spec, target, seq, rng));
  }
  return state;
}

core::Result<std::vector<PreemptionRecord>> run_preemption_stream(cluster::ClusterState& state,
                                                                  const PreemptionStreamSpec& spec,
                                                                  std::uint64_t seed) {
  if (spec.count < 0) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "preemption stream: count = {}; need >= 0", spec.count);
  }
  TESSERA_TRY(check_classes(spec.preemptors, "preemption stream: preemptors"));
  // Drawn before anything runs, so every method sees the same preemptors.
  core::RandomStream rng = core::RandomStreams(seed).stream("preemptors");
  std::vector<const PodClass*> classes;
  for (int i = 0; i < spec.count; ++i) classes.push_back(&detail::draw_class(spec.preemptors, rng));

  std::int64_t seq = 0;
  for (const auto& p : state.pods()) seq = std::max(seq, p.pod.start_seq + 1);
  std::vector<PreemptionRecord> out;
  out.reserve(classes.size());
  cluster::PreemptionWorkspace workspace;
  for (int i = 0; i < spec.count; ++i) {
    const PodClass& c = *classes[static_cast<std::size_t>(i)];
    const cluster::Pod pod = detail::make_pod(c, fmt::format("preemptor-{}-{}", i, c.name), seq++);
    PreemptionRecord rec = detail::start_record(pod, c.name, spec.method);
    rec.sequence = i;
    const auto placed = detail::place_for(state, pod, spec.method);
    TESSERA_TRY(detail::refuse_invalid(placed.status, pod, placed.reason));
    if (placed.placement) {
      TESSERA_TRY(detail::bind_recorded(state, pod, *placed.placement, rec));
      out.push_back(std::move(rec));
      continue;
    }
    const auto decision = cluster::preempt(state, pod, spec.method, spec.config, workspace);
    TESSERA_TRY(detail::refuse_invalid(decision.status, pod, decision.reason));
    rec.nodes_examined = decision.nodes_examined;
    rec.sets_evaluated = decision.sets_evaluated;
    if (!decision.chosen) {
      rec.reason = decision.reason;
      out.push_back(std::move(rec));
      continue;
    }
    const auto& cand = *decision.chosen;
    rec.preempted = !cand.victims.empty();
    detail::record_victims(state, cand.victims, rec);
    for (int v : cand.victims) state.evict(v);
    auto a = cluster::best_assignment(state.node(cand.node), pod.request);
    if (!a) {
      rec.node = cand.node;
      rec.node_name = state.node(cand.node).name();
      rec.reason = "the victims' resources do not hold the preemptor on its node";
      out.push_back(std::move(rec));
      continue;
    }
    cluster::Placement placement;
    placement.node = cand.node;
    placement.assignment = std::move(*a);
    TESSERA_TRY(detail::bind_recorded(state, pod, placement, rec));
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace tessera::sim
