// The scenario simulator (`tessera cluster-sim`): services that autoscale on a diurnal curve,
// batch jobs and trace pods, scheduled with cluster::place and cluster::preempt on sim::Engine.
//
// Scheduling follows kube-scheduler's shape: one pass over the pending pods, highest priority
// first (then longest waiting), after anything that changes the cluster (an arrival, a completion,
// a scale step, an eviction), coalesced to one pass per instant. A pod that does not fit preempts
// when it outranks some bound pod. A pod whose preemption found nothing retries preemption after
// a backoff of 1 s doubling to 10 s (kube-scheduler's podInitialBackoffSeconds = 1 and
// podMaxBackoffSeconds = 10, KubeSchedulerConfiguration v1 defaults); placing it without
// preemption is tried at every pass. Within a pass, a request that failed is not tried again for
// a pod of the same shape and priority.
//
// So that a run scales with the cluster, the pending pods wait in one queue per shape
// (pending_queue.hpp) and cluster::place's answers come from an index kept current as pods bind
// and leave (placement_index.hpp): the same decisions as sorting every pending pod and searching
// every node at each pass, at a logarithmic cost per pod. cluster::preempt still reads every node.

#include "tessera/backends/sim/cluster/sim_cluster.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "tessera/backends/sim/cluster/internal/pending_queue.hpp"
#include "tessera/backends/sim/cluster/internal/placement_index.hpp"
#include "tessera/backends/sim/cluster/internal/sim_cluster_util.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::sim {

namespace {

using core::Nanos;

constexpr Nanos kInitialBackoff = core::kNanosPerSecond;  // kube-scheduler default, see the top
constexpr Nanos kMaxBackoff = 10 * core::kNanosPerSecond;
constexpr double kNanosPerHour = 3600.0 * 1e9;

enum class Source : std::uint8_t { kService, kBatch, kTrace };

struct Job {
  Source source = Source::kBatch;
  int spec = 0;          // index into services / batches
  std::string workload;  // service or batch name, "trace"
  std::string pod_class;
  cluster::Pod pod;
  Nanos run_time = core::kNever;  // batch and trace: how long it runs once bound
  bool requeue_evicted = true;
  bool pending = false;
  bool done = false;
  Nanos pending_since = 0;
  Nanos bound_at = 0;
  int pod_index = -1;  // in ClusterState while bound
  device::TimerId completion = 0;
  Nanos next_preempt = 0;  // backoff after a preemption that found nothing
  Nanos backoff = kInitialBackoff;
};

class Simulation {
 public:
  Simulation(const ClusterScenario& sc, const ClusterSimOptions& opts)
      : sc_(sc), opts_(opts), streams_(sc.seed), preemption_(sc.preemption), placement_(state_) {
    // A pod preempts only after its placement failed on the same state.
    preemption_.placement_failed = true;
  }

  core::Result<ClusterSimResult> run();

 private:
  core::Status build_nodes();
  core::Status load_inputs();
  void start();

  int new_job(Source source, int spec, std::string workload, const PodClass& c, Nanos run_time,
              bool requeue);
  // Queues job `j` (or drops it, counted, when no node of the cluster could ever hold it).
  void enqueue(int j);
  void request_pass();
  core::Status pass();
  // Places or preempts for pending job `j` in a pass; false when the rest of its shape is to be
  // skipped in this pass (it neither fit nor preempted).
  core::Result<bool> schedule(int j, Nanos now);
  core::Status bind(int j, const cluster::Placement& placement, PreemptionRecord* rec);
  void evict_victim(int pod_index);
  void unbind(Job& job);  // frees what the job's pod holds
  void finish(int j);     // completion or scale-down of a bound or pending job

  void autoscale(int s);
  void batch_arrival(int b);
  void sample();

  const ClusterScenario& sc_;
  const ClusterSimOptions& opts_;
  core::RandomStreams streams_;
  Engine engine_;
  cluster::ClusterState state_;
  cluster::PreemptionConfig preemption_;
  cluster::PreemptionWorkspace preemption_workspace_;
  detail::PlacementIndex placement_;  // cluster::place's answers, kept current with state_
  std::vector<std::shared_ptr<const hw::HostTopology>> shapes_;  // one per node shape
  ClusterSimResult result_;
  core::Status error_;  // first error inside an event; ends the run

  std::vector<Job> jobs_;
  detail::PendingQueue pending_;
  std::vector<int> job_of_pod_;             // cluster pod index -> job id
  std::map<std::int32_t, int> bound_prio_;  // priority -> bound pods with it
  std::int64_t seq_ = 0;
  bool pass_requested_ = false;
  int total_cores_ = 0;

  std::vector<std::vector<int>> replicas_;  // per service: live replica jobs, oldest first
  std::vector<core::RandomStream> load_rng_;
  std::vector<core::RandomStream> batch_rng_;
  std::vector<std::vector<double>> philly_;  // per batch spec (empty unless kPhilly)
  std::vector<TracePod> trace_;
};

core::Status Simulation::build_nodes() {
  const auto add = [this](std::string name,
                          const std::shared_ptr<const hw::HostTopology>& shape) -> core::Status {
    TESSERA_TRY(state_.add_node(std::move(name), shape));
    result_.total_gpus += static_cast<int>(shape->gpus().size());
    total_cores_ += shape->total_cores();
    return {};
  };
  for (const auto& pool : sc_.nodes) {
    if (!pool.openb_node_csv.empty()) {
      TESSERA_ASSIGN_OR_RETURN(auto nodes, load_openb_nodes(pool.openb_node_csv));
      if (pool.count > static_cast<int>(nodes.size())) {
        return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                           "{}: count {} but the list has {} nodes", pool.openb_node_csv,
                           pool.count, nodes.size());
      }
      if (pool.count > 0) nodes.resize(static_cast<std::size_t>(pool.count));
      for (auto& node : nodes) {
        if (std::ranges::find(shapes_, node.topology) == shapes_.end()) {
          shapes_.push_back(node.topology);
        }
        TESSERA_TRY(add(std::move(node.name), node.topology));
      }
      continue;
    }
    hw::TopologyOptions options;
    options.numa_memory_bytes = pool.numa_memory_bytes;
    core::Result<hw::HostTopology> topo = pool.preset.empty()
                                              ? hw::load_topology_file(pool.topology_file, options)
                                              : hw::preset(pool.preset, pool.name_prefix);
    if (!topo) {
      return std::unexpected(
          topo.error().with_context(fmt::format("nodes '{}'", pool.name_prefix)));
    }
    auto shared = std::make_shared<const hw::HostTopology>(std::move(*topo));
    shapes_.push_back(shared);
    for (int i = 0; i < pool.count; ++i) {
      TESSERA_TRY(add(fmt::format("{}-{}", pool.name_prefix, i), shared));
    }
  }
  result_.nodes = static_cast<int>(state_.nodes().size());
  return {};
}

core::Status Simulation::load_inputs() {
  for (const auto& b : sc_.batches) {
    std::vector<double> runtimes;
    if (b.durations == DurationSource::kPhilly) {
      TESSERA_ASSIGN_OR_RETURN(runtimes, load_philly_runtimes(b.philly_runtime_csv));
    }
    philly_.push_back(std::move(runtimes));
  }
  if (sc_.trace) {
    TESSERA_ASSIGN_OR_RETURN(trace_, load_openb_pods(*sc_.trace));
  }
  return {};
}

int Simulation::new_job(Source source, int spec, std::string workload, const PodClass& c,
                        Nanos run_time, bool requeue) {
  Job j;
  j.source = source;
  j.spec = spec;
  j.pod_class = c.name;
  j.pod = detail::make_pod(c, fmt::format("{}/{}", workload, jobs_.size()), 0);
  j.workload = std::move(workload);
  j.run_time = run_time;
  j.requeue_evicted = requeue;
  jobs_.push_back(std::move(j));
  ++result_.pods_created;
  return static_cast<int>(jobs_.size()) - 1;
}

void Simulation::enqueue(int j) {
  Job& job = jobs_[static_cast<std::size_t>(j)];
  bool fits = false;
  for (const auto& shape : shapes_) fits = fits || detail::fits_empty(shape, job.pod);
  if (!fits) {
    ++result_.unschedulable;
    job.done = true;
    return;
  }
  job.pending = true;
  job.pending_since = engine_.now();
  job.next_preempt = engine_.now();
  job.backoff = kInitialBackoff;
  pending_.push(detail::pending_shape(job.pod), job.pending_since, j);
  request_pass();
}

void Simulation::request_pass() {
  if (pass_requested_) return;
  pass_requested_ = true;
  engine_.schedule_at(engine_.now(), [this] {
    pass_requested_ = false;
    if (auto s = pass(); !s && error_) {
      error_ = s;
      engine_.stop();
    }
  });
}

core::Status Simulation::bind(int j, const cluster::Placement& placement, PreemptionRecord* rec) {
  Job& job = jobs_[static_cast<std::size_t>(j)];
  job.pod.start_seq = seq_++;
  int index = -1;
  if (rec) {
    TESSERA_ASSIGN_OR_RETURN(index, detail::bind_recorded(state_, job.pod, placement, *rec));
  } else {
    TESSERA_ASSIGN_OR_RETURN(index, state_.bind(job.pod, placement.node, placement.assignment));
  }
  if (job_of_pod_.size() <= static_cast<std::size_t>(index)) {
    job_of_pod_.resize(static_cast<std::size_t>(index) + 1, -1);
  }
  job_of_pod_[static_cast<std::size_t>(index)] = j;
  placement_.node_changed(placement.node);
  ++bound_prio_[job.pod.priority];
  if (job.pod.qos == cluster::Qos::kGuaranteed &&
      !cluster::satisfies(placement.assignment.affinity, job.pod.topology)) {
    ++result_.bound_below_requirement;
  }
  PendingTime w;
  w.workload = job.workload;
  w.wait = engine_.now() - job.pending_since;
  result_.pending.push_back(std::move(w));
  job.pending = false;
  job.pod_index = index;
  job.bound_at = engine_.now();
  if (job.run_time != core::kNever) {
    job.completion = engine_.schedule_at(engine_.now() + job.run_time, [this, j] {
      jobs_[static_cast<std::size_t>(j)].completion = 0;  // running now: nothing to cancel
      ++result_.pods_completed;
      finish(j);
    });
  }
  return {};
}

// Unbinds job `j`'s pod, if bound, and retires the job.
void Simulation::finish(int j) {
  Job& job = jobs_[static_cast<std::size_t>(j)];
  if (job.pod_index >= 0) unbind(job);
  if (job.pending) pending_.erase(detail::pending_shape(job.pod), job.pending_since, j);
  job.pending = false;
  job.done = true;
  request_pass();
}

void Simulation::unbind(Job& job) {
  const int node = state_.pod(job.pod_index).node;
  state_.evict(job.pod_index);
  placement_.node_changed(node);
  if (--bound_prio_[job.pod.priority] == 0) bound_prio_.erase(job.pod.priority);
  job.pod_index = -1;
  if (job.completion) engine_.cancel(job.completion);
  job.completion = 0;
}

void Simulation::evict_victim(int pod_index) {
  const int j = job_of_pod_[static_cast<std::size_t>(pod_index)];
  Job& job = jobs_[static_cast<std::size_t>(j)];
  ++result_.evictions;
  result_.evicted_gpu_hours +=
      job.pod.request.gpus * static_cast<double>(engine_.now() - job.bound_at) / kNanosPerHour;
  unbind(job);
  // A service replica is recreated by its controller; batch and trace pods as configured. A
  // requeued pod starts over: what it had run is lost (counted in evicted GPU-hours).
  if (job.source == Source::kService || job.requeue_evicted) {
    ++result_.requeued;
    enqueue(j);
  } else {
    ++result_.lost;
    job.done = true;
  }
}

core::Status Simulation::pass() {
  ++result_.scheduling_passes;
  const Nanos now = engine_.now();
  return pending_.pass([this, now](int j) { return schedule(j, now); });
}

core::Result<bool> Simulation::schedule(int j, Nanos now) {
  Job& job = jobs_[static_cast<std::size_t>(j)];
  const cluster::Pod placed_as = detail::placement_view(job.pod, sc_.method);
  if (auto valid = cluster::validate(placed_as); !valid) {
    TESSERA_TRY(detail::refuse_invalid(cluster::DecisionStatus::kInvalid, job.pod,
                                       valid.error().message()));
  }
  if (const auto placement = placement_.place(placed_as)) {
    pending_.erase(detail::pending_shape(job.pod), job.pending_since, j);
    TESSERA_TRY(bind(j, *placement, nullptr));
    return true;
  }
  const bool outranks = !bound_prio_.empty() && bound_prio_.begin()->first < job.pod.priority;
  if (!outranks || now < job.next_preempt) return false;
  const auto decision =
      cluster::preempt(state_, job.pod, sc_.method, preemption_, preemption_workspace_);
  TESSERA_TRY(detail::refuse_invalid(decision.status, job.pod, decision.reason));
  PreemptionRecord rec = detail::start_record(job.pod, job.pod_class, sc_.method);
  rec.time = now;
  rec.sequence = static_cast<int>(result_.preemptions.size());
  rec.nodes_examined = decision.nodes_examined;
  rec.sets_evaluated = decision.sets_evaluated;
  if (!decision.chosen) {
    rec.reason = decision.reason;
    result_.preemptions.push_back(std::move(rec));
    job.next_preempt = now + job.backoff;
    job.backoff = std::min(kMaxBackoff, 2 * job.backoff);
    return false;
  }
  const auto cand = *decision.chosen;
  rec.preempted = !cand.victims.empty();
  detail::record_victims(state_, cand.victims, rec);
  for (int v : cand.victims) evict_victim(v);
  auto a = cluster::best_assignment(state_.node(cand.node), job.pod.request);
  if (!a) {
    rec.node = cand.node;
    rec.node_name = state_.node(cand.node).name();
    rec.reason = "the victims' resources do not hold the preemptor on its node";
    result_.preemptions.push_back(std::move(rec));
    return true;
  }
  cluster::Placement placement;
  placement.node = cand.node;
  placement.assignment = std::move(*a);
  pending_.erase(detail::pending_shape(job.pod), job.pending_since, j);
  TESSERA_TRY(bind(j, placement, &rec));
  result_.preemptions.push_back(std::move(rec));
  return true;
}

void Simulation::autoscale(int s) {
  const ServiceSpec& spec = sc_.services[static_cast<std::size_t>(s)];
  const double t = static_cast<double>(engine_.now() - spec.peak_at);
  const double curve = 1.0 + spec.amplitude * std::cos(2.0 * std::numbers::pi * t /
                                                       static_cast<double>(spec.period));
  auto& rng = load_rng_[static_cast<std::size_t>(s)];
  const double noise = spec.noise > 0 ? std::max(0.0, 1.0 + rng.normal(0.0, spec.noise)) : 1.0;
  const double load = spec.mean_load * curve * noise;
  const int want = std::clamp(static_cast<int>(std::ceil(load / spec.target_load_per_replica)),
                              spec.min_replicas, spec.max_replicas);
  auto& live = replicas_[static_cast<std::size_t>(s)];
  std::erase_if(live, [this](int j) { return jobs_[static_cast<std::size_t>(j)].done; });
  while (static_cast<int>(live.size()) < want) {
    const int j = new_job(Source::kService, s, spec.replica.name, spec.replica, core::kNever, true);
    live.push_back(j);
    enqueue(j);
  }
  while (static_cast<int>(live.size()) > want) {
    finish(live.back());  // the newest replica goes first
    live.pop_back();
  }
  engine_.schedule_at(engine_.now() + spec.autoscale_interval, [this, s] { autoscale(s); });
}

void Simulation::batch_arrival(int b) {
  const BatchSpec& spec = sc_.batches[static_cast<std::size_t>(b)];
  auto& rng = batch_rng_[static_cast<std::size_t>(b)];
  const PodClass& c = detail::draw_class(spec.shapes, rng);
  Nanos run = 0;
  if (spec.durations == DurationSource::kPhilly) {
    const auto& rt = philly_[static_cast<std::size_t>(b)];
    run = core::seconds(rt[rng.below(rt.size())]);
  } else {
    run = core::seconds(rng.exponential(1.0) * core::to_seconds(spec.mean_duration));
  }
  run = std::clamp(run, spec.min_duration, spec.max_duration);
  const int j = new_job(Source::kBatch, b, spec.name, c, run, spec.requeue_evicted);
  enqueue(j);
  const double gap_h = rng.exponential(spec.arrivals_per_hour);
  engine_.schedule_at(engine_.now() + static_cast<Nanos>(gap_h * kNanosPerHour),
                      [this, b] { batch_arrival(b); });
}

void Simulation::sample() {
  UtilisationSample u;
  u.time = engine_.now();
  int gpus = 0;
  int cores = 0;
  for (const auto& node : state_.nodes()) {
    for (int owner : node.gpu_owner()) gpus += owner >= 0 ? 1 : 0;
    const auto& owners = node.core_group_owner();
    for (std::size_t g = 0; g < owners.size(); ++g) {
      if (owners[g] >= 0) cores += node.topology().core_group(static_cast<int>(g)).cores;
    }
  }
  u.gpu = result_.total_gpus > 0 ? static_cast<double>(gpus) / result_.total_gpus : 0;
  u.cpu = total_cores_ > 0 ? static_cast<double>(cores) / total_cores_ : 0;
  u.pending = static_cast<int>(pending_.size());
  result_.utilisation.push_back(u);
  if (opts_.progress) opts_.progress(engine_.now(), sc_.duration);
  engine_.schedule_at(engine_.now() + sc_.sample_interval, [this] { sample(); });
}

void Simulation::start() {
  for (std::size_t s = 0; s < sc_.services.size(); ++s) {
    replicas_.emplace_back();
    load_rng_.push_back(streams_.stream("load/" + sc_.services[s].replica.name));
    engine_.schedule_at(0, [this, s] { autoscale(static_cast<int>(s)); });
  }
  for (std::size_t b = 0; b < sc_.batches.size(); ++b) {
    batch_rng_.push_back(streams_.stream("batch/" + sc_.batches[b].name));
    if (sc_.batches[b].arrivals_per_hour > 0) {
      engine_.schedule_at(0, [this, b] { batch_arrival(static_cast<int>(b)); });
    }
  }
  for (std::size_t i = 0; i < trace_.size(); ++i) {
    if (trace_[i].created >= sc_.duration) continue;
    engine_.schedule_at(trace_[i].created, [this, i] {
      const TracePod& tp = trace_[i];
      PodClass c;
      c.name = tp.pod.uid;
      c.priority = tp.pod.priority;
      c.qos = tp.pod.qos;
      c.topology = tp.pod.topology;
      c.request = tp.pod.request;
      const int j = new_job(Source::kTrace, 0, "trace", c, tp.lifetime, sc_.trace->requeue_evicted);
      enqueue(j);
    });
  }
  engine_.schedule_at(0, [this] { sample(); });
}

core::Result<ClusterSimResult> Simulation::run() {
  result_.scenario = sc_.name;
  result_.method = sc_.method;
  result_.alpha = sc_.preemption.alpha;
  result_.seed = sc_.seed;
  result_.duration = sc_.duration;
  TESSERA_TRY(build_nodes());
  TESSERA_TRY(load_inputs());
  start();
  engine_.run_until(sc_.duration);
  if (!error_) return std::unexpected(error_.error());
  for (int j : pending_.jobs_in_push_order()) {
    PendingTime w;
    w.workload = jobs_[static_cast<std::size_t>(j)].workload;
    w.wait = sc_.duration - jobs_[static_cast<std::size_t>(j)].pending_since;
    w.censored = true;
    result_.pending.push_back(std::move(w));
  }
  return std::move(result_);
}

}  // namespace

core::Result<ClusterSimResult> run_cluster_sim(const ClusterScenario& scenario,
                                               const ClusterSimOptions& options) {
  Simulation sim(scenario, options);
  return sim.run();
}

}  // namespace tessera::sim
