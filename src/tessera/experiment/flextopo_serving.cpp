// flextopo-serving: the serving effect of topology-aware preemption (FlexTopo, arXiv 2411.11560;
// what its reviewers asked for, seed 004 major comment 1).
//
// Cluster half. A cycle: a fresh 100-node cluster of 8x RTX 4090 servers filled to 100% of its
// GPUs by the fill mix below (sim::build_saturated_cluster: random fill and three rounds of 30%
// churn), then the online LLM service scales up by `replicas` replicas, one at a time, each bound
// before the next (sim::run_preemption_stream). Two server shapes: rtx4090-2s2n (2 sockets x 2
// NUMA nodes of 2 GPUs: all three of the paper's placement levels exist) and rtx4090-2s (2 sockets
// x 1 NUMA node of 4 GPUs, flextopo-preemption's main setting). Every method and alpha gets a copy
// of the same cluster and the same replicas (common random numbers). A replica asks for 2 GPUs on
// one NUMA node with its GPUs' share of cores and half their share of memory, priority 1000, once
// as guaranteed (the requirement is a hard filter), once as best-effort (a preference).
// ASSUMPTION, the fill mix: flextopo-preemption's "paper" mix (its .cpp says why): LLM replicas
// priority 1000 (1 and 2 GPUs), other services 500 (1, 2), batch 0 (1, 2), training 100 (4, 8).
//
// What a placement means for serving. A replica bound at affinity a serves with the all-reduce
// penalty of a (workload::TopologyPenalty: 1x same NUMA node, 1.2x same socket, 3.2x across
// sockets — FlexTopo §2.2's measurements on its 4090 servers, applied to the host-link time of
// the collectives only, nothing else). A guaranteed replica that is not bound, or that the
// topology-blind default search binds where its requirement fails (kubelet's topology manager
// refuses it with TopologyAffinityError after its victims are gone), serves nothing: lost
// capacity. A best-effort replica serves wherever it lands.
//
// Serving half. Each replica runs qwen2.5-14b (29.5 GB of BF16 weights: two 24 GB boards) at
// tensor-parallel degree 2 on the simulated RTX 4090 (first GPU's kernels; the two are
// symmetric), behind the inference server (continuous batching, vLLM defaults, its paged KV cache
// sized as vLLM sizes it: workload/serving/kv_cache.hpp), with every replica serving the same
// request stream: every 4th request (a round-robin load balancer over four replicas) of the first
// 20 minutes of the Azure LLM code trace (Splitwise, ISCA 2024;
// ../shared/data/llm_traces/azure_llm_2023), at its own pace: 907 requests.
// ASSUMPTION, the load: those 20 minutes hold 3628 requests (3.0/s, about 2070 prompt and 28
// output tokens each), one service's whole traffic; a quarter of it is about a third of a same-NUMA
// replica's saturated rate (about 2.2 requests/s), the kind of headroom an autoscaler keeps. The
// trace is bursty (dozens of requests within a second, then quiet minutes) and the server prefills
// before it decodes (vLLM without chunked prefill), so the tails are queueing behind bursts, and
// a slower prefill lengthens every queue; at a higher share the cross-socket replicas saturate
// first and the differences below grow.
// Replicas at the same affinity see the same load and are identical, so three runs (one per
// affinity) give every replica's requests; a method's request-level distribution is the mixture
// of the three weighted by how many of its replicas serve at each affinity. That is exact under
// the assumption that replicas do not interact (separate GPUs; the host links of replicas sharing
// a socket are not modelled as shared), and that a lost replica's requests are not redistributed
// (they are counted as capacity lost, not as load on the others).
// Throughput is the saturated rate: `capacity_requests` requests of the window sent at once.

#include "tessera/experiment/flextopo_serving.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/data_dir.hpp"
#include "tessera/experiment/internal/flextopo_mixes.hpp"
#include "tessera/experiment/run.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/tenant/inference_server.hpp"
#include "tessera/workload/arrivals.hpp"
#include "tessera/workload/models/tensor_parallel.hpp"

namespace tessera::experiment {

namespace {

using cluster::Affinity;
using cluster::PreemptionMethod;
using cluster::Qos;
using cluster::TopologyRequirement;

constexpr std::uint64_t kDefaultSeed = 20241118;  // the paper's arXiv submission date
constexpr const char* kGpu = "rtx4090";
constexpr const char* kModel = "qwen2.5-14b";
constexpr int kTensorParallel = 2;
constexpr std::int32_t kServicePriority = 1000;
constexpr const char* kTraceFile = "llm_traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv";

constexpr PreemptionMethod kMethods[] = {
    PreemptionMethod::kIncremental, PreemptionMethod::kExhaustive, PreemptionMethod::kDefaultK8s};
constexpr Affinity kAffinities[] = {Affinity::kSameNuma, Affinity::kSameSocket,
                                    Affinity::kCrossSocket};
constexpr Qos kQos[] = {Qos::kGuaranteed, Qos::kBestEffort};

double penalty_of(Affinity a) {
  const workload::TopologyPenalty p;
  switch (a) {
    case Affinity::kSameNuma: return p.same_numa;
    case Affinity::kSameSocket: return p.same_socket;
    case Affinity::kCrossSocket: return p.cross_socket;
  }
  return p.cross_socket;
}

// One replica of the service: kTensorParallel GPUs on one NUMA node with their share of the
// server's cores and half their share of its memory.
sim::PodClass replica_class(Qos qos, const hw::HostTopology& topo) {
  const int gpus = static_cast<int>(topo.gpus().size());
  sim::PodClass c;
  c.name = "llm-tp2";
  c.weight = 1.0;
  c.priority = kServicePriority;
  c.qos = qos;
  c.topology = TopologyRequirement::kNuma;
  c.request.gpus = kTensorParallel;
  c.request.cpus = kTensorParallel * (topo.total_cores() / gpus);
  c.request.memory_bytes =
      kTensorParallel * (topo.total_memory_bytes().value_or(0) / gpus / 2);  // presets give it
  return c;
}

std::uint64_t cycle_seed(std::uint64_t seed, int cycle) {
  return core::RandomStreams(seed).stream(fmt::format("cycle/{}", cycle)).next_u64();
}

// ---- cluster half ----------------------------------------------------------------------------

// What one method (at one alpha, for one QoS) did to the service's replicas over all cycles.
struct Outcome {
  std::array<std::int64_t, 3> serving{};  // by affinity, kAffinities order
  std::int64_t replicas = 0;
  std::int64_t unplaced = 0;  // no candidate and no room
  std::int64_t refused = 0;   // guaranteed, bound where its requirement fails
  std::int64_t hits = 0;      // bound meeting the requirement
  std::int64_t victims = 0;
  std::int64_t preemptions = 0;
  std::int64_t lost() const { return unplaced + refused; }
};

void add(Outcome& o, Qos qos, const std::vector<sim::PreemptionRecord>& records) {
  for (const auto& r : records) {
    ++o.replicas;
    o.victims += static_cast<std::int64_t>(r.victims.size());
    o.preemptions += r.preempted ? 1 : 0;
    if (!r.placed || !r.affinity) {
      ++o.unplaced;
      continue;
    }
    o.hits += r.hit ? 1 : 0;
    if (qos == Qos::kGuaranteed && !r.hit) {
      ++o.refused;
      continue;
    }
    ++o.serving[static_cast<std::size_t>(*r.affinity)];
  }
}

// Row key: QoS, method, alpha (default-k8s is blind to alpha: one row, alpha < 0).
struct Key {
  Qos qos;
  PreemptionMethod method;
  double alpha;
  auto operator<=>(const Key&) const = default;
};

core::Result<std::map<Key, Outcome>> run_cluster_half(const FlextopoServingPlan& plan,
                                                      const std::string& preset, std::uint64_t seed,
                                                      const std::function<void()>& tick) {
  TESSERA_ASSIGN_OR_RETURN(const hw::HostTopology topo, hw::preset(preset, preset));
  sim::SaturationSpec sat;
  sat.preset = preset;
  sat.nodes = plan.nodes;
  sat.gpu_fill = 1.0;
  TESSERA_ASSIGN_OR_RETURN(sat.fill, flextopo_mix("paper", preset));

  std::map<Key, Outcome> out;
  for (int c = 0; c < plan.cycles; ++c) {
    const std::uint64_t cs = cycle_seed(seed, c);
    TESSERA_ASSIGN_OR_RETURN(const cluster::ClusterState base,
                             sim::build_saturated_cluster(sat, cs));
    for (const Qos qos : kQos) {
      sim::PreemptionStreamSpec stream;
      stream.count = plan.replicas;
      stream.preemptors = {replica_class(qos, topo)};
      // T's values are the inverse of the same penalties the replicas serve with.
      const workload::TopologyPenalty p;
      stream.config.topology = cluster::for_penalties(p.same_socket, p.cross_socket);
      for (const PreemptionMethod m : kMethods) {
        const bool blind = m == PreemptionMethod::kDefaultK8s;
        const std::vector<double> alphas = blind ? std::vector<double>{-1.0} : plan.alphas;
        for (const double alpha : alphas) {
          cluster::ClusterState state = base;
          stream.method = m;
          if (alpha >= 0) stream.config.alpha = alpha;
          TESSERA_ASSIGN_OR_RETURN(const auto records,
                                   sim::run_preemption_stream(state, stream, cs));
          add(out[Key{qos, m, alpha}], qos, records);
          if (tick) tick();
        }
      }
    }
  }
  return out;
}

// ---- serving half ----------------------------------------------------------------------------

struct Replica {
  Affinity affinity = Affinity::kSameNuma;
  double penalty = 1;
  std::vector<double> ttft_ms;  // sorted, every request of the stream
  std::vector<double> tpot_ms;  // sorted, requests with more than one output token
  metrics::Percentiles ttft, tpot;
  double served_tokens_per_s = 0;    // output tokens of the stream over its span
  double capacity_tokens_per_s = 0;  // saturated: output tokens per second
  double capacity_requests_per_s = 0;
  // One 2048-token prefill and one decode step of 8 sequences at 2048 tokens of context.
  double prefill_ms = 0, prefill_comm_share = 0;
  double decode_ms = 0, decode_comm_share = 0;
};

// Time spent in communication kernels, on one device.
class CommTime final : public device::DeviceObserver {
 public:
  void on_kernel_complete(const device::KernelEvent& e) override {
    if (e.kernel->kind == workload::KernelClass::kCommunication) comm += e.end - e.start;
  }
  core::Nanos comm = 0;
};

struct Device {
  sim::Engine engine;
  std::unique_ptr<sim::SimGpu> gpu;
  std::unique_ptr<gpu::SharingMode> mode;
};

core::Status open(Device& d) {
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(kGpu));
  TESSERA_ASSIGN_OR_RETURN(d.gpu, sim::SimGpu::create(d.engine, spec, sim::default_options(spec)));
  TESSERA_ASSIGN_OR_RETURN(d.mode, gpu::make_sharing_mode("exclusive"));
  const std::vector<gpu::TenantInfo> infos{
      {.id = 0, .name = "llm", .latency_critical = true, .priority = kServicePriority}};
  return d.mode->attach(*d.gpu, infos);
}

workload::TensorParallel tensor_parallel(double penalty) {
  workload::TensorParallel tp;
  tp.degree = kTensorParallel;
  tp.penalty = penalty;
  return tp;
}

core::Result<std::vector<metrics::RequestRecord>> serve(
    const workload::ModelConfig& model, double penalty,
    const std::vector<workload::Request>& reqs) {
  Device d;
  TESSERA_TRY(open(d));
  tenant::InferenceConfig config;
  config.name = "llm";
  config.model = model;
  config.tensor_parallel = tensor_parallel(penalty);
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(kGpu));
  TESSERA_ASSIGN_OR_RETURN(
      const auto memory,
      workload::size_kv_cache(model, config.tensor_parallel, spec.memory_bytes, {},
                              config.max_batched_tokens, config.max_num_seqs));
  config.kv_cache = memory.cache;
  tenant::InferenceServer server(0, config, reqs, *d.mode, d.engine);
  server.start();
  d.engine.run_until(core::kNever);
  if (const auto& f = server.failure()) return std::unexpected(*f);
  return server.records();
}

struct StepTime {
  double ms = 0;
  double comm_share = 0;  // of the step's time, in collectives
};

// One step alone on the device.
core::Result<StepTime> step(const workload::KernelSequence& seq) {
  Device d;
  TESSERA_TRY(open(d));
  CommTime comm;
  d.gpu->add_observer(&comm);
  core::Nanos finished = 0;
  TESSERA_TRY(
      d.mode->submit(0, std::make_shared<const workload::KernelSequence>(seq), 0,
                     [&](const device::SubmissionDone& done) { finished = done.finished; }));
  d.engine.run_until(core::kNever);
  const double ms = core::to_millis(finished);
  return StepTime{.ms = ms,
                  .comm_share = finished > 0 ? static_cast<double>(comm.comm) / finished : 0.0};
}

core::Result<Replica> run_replica(Affinity a, const workload::ModelConfig& model,
                                  const std::vector<workload::Request>& stream,
                                  const std::vector<workload::Request>& burst) {
  Replica r;
  r.affinity = a;
  r.penalty = penalty_of(a);
  TESSERA_ASSIGN_OR_RETURN(const auto records, serve(model, r.penalty, stream));
  double tokens = 0;
  core::Nanos last = 0;
  for (const auto& rec : records) {
    if (rec.first_token >= 0) r.ttft_ms.push_back(core::to_millis(rec.ttft()));
    if (!rec.done()) continue;
    if (rec.output_tokens > 1) r.tpot_ms.push_back(core::to_millis(rec.tpot()));
    tokens += rec.output_tokens;
    last = std::max(last, rec.finished);
  }
  std::sort(r.ttft_ms.begin(), r.ttft_ms.end());
  std::sort(r.tpot_ms.begin(), r.tpot_ms.end());
  r.ttft = metrics::summarize(r.ttft_ms);
  r.tpot = metrics::summarize(r.tpot_ms);
  r.served_tokens_per_s = last > 0 ? tokens / core::to_seconds(last) : 0;

  TESSERA_ASSIGN_OR_RETURN(const auto saturated, serve(model, r.penalty, burst));
  double burst_tokens = 0;
  core::Nanos makespan = 0;
  for (const auto& rec : saturated) {
    burst_tokens += rec.output_tokens;
    makespan = std::max(makespan, rec.finished);
  }
  if (makespan > 0) {
    r.capacity_tokens_per_s = burst_tokens / core::to_seconds(makespan);
    r.capacity_requests_per_s = static_cast<double>(saturated.size()) / core::to_seconds(makespan);
  }

  const auto tp = tensor_parallel(r.penalty);
  const std::vector<int> prompt{2048};
  const std::vector<int> contexts(8, 2048);
  TESSERA_ASSIGN_OR_RETURN(const StepTime prefill,
                           step(workload::tp_prefill_step(model, tp, prompt)));
  TESSERA_ASSIGN_OR_RETURN(const StepTime decode,
                           step(workload::tp_decode_step(model, tp, contexts)));
  r.prefill_ms = prefill.ms;
  r.prefill_comm_share = prefill.comm_share;
  r.decode_ms = decode.ms;
  r.decode_comm_share = decode.comm_share;
  return r;
}

// Nearest-rank percentile of the mixture in which every value of replicas[a] appears weight[a]
// times (the same rank rule as metrics::summarize). `Field` picks the sorted samples.
template <typename Field>
double mixture_percentile(std::span<const Replica> replicas, const std::array<std::int64_t, 3>& w,
                          std::size_t percent, Field field) {
  std::int64_t total = 0;
  for (std::size_t a = 0; a < 3; ++a)
    total += w[a] * static_cast<std::int64_t>(field(replicas[a]).size());
  if (total == 0) return 0;
  const std::int64_t rank =
      std::max<std::int64_t>(1, (static_cast<std::int64_t>(percent) * total + 99) / 100);
  std::array<std::size_t, 3> at{};
  std::int64_t seen = 0;
  while (true) {
    std::size_t best = 3;
    for (std::size_t a = 0; a < 3; ++a) {
      if (w[a] == 0 || at[a] >= field(replicas[a]).size()) continue;
      if (best == 3 || field(replicas[a])[at[a]] < field(replicas[best])[at[best]]) best = a;
    }
    const double v = field(replicas[best])[at[best]++];
    seen += w[best];
    if (seen >= rank) return v;
  }
}

// ---- report ----------------------------------------------------------------------------------

std::string alpha_label(double alpha) {
  return alpha < 0 ? "-" : fmt::format("{:.2f}", alpha);
}

struct Row {
  Key key;
  Outcome o;
  double hit_rate = 0;
  double victims_per_replica = 0;
  double ttft_p99 = 0, tpot_p99 = 0, ttft_p50 = 0;
  double capacity_per_scale_up = 0;  // output tokens/s of the replicas that serve, per scale-up
  double capacity_per_replica = 0;   // the same over every replica asked for (lost ones: 0)
};

Row make_row(const Key& k, const Outcome& o, std::span<const Replica> replicas, int cycles) {
  Row r;
  r.key = k;
  r.o = o;
  const auto n = static_cast<double>(o.replicas);
  r.hit_rate = n > 0 ? static_cast<double>(o.hits) / n : 0;
  r.victims_per_replica = n > 0 ? static_cast<double>(o.victims) / n : 0;
  const auto ttft = [](const Replica& x) -> const std::vector<double>& { return x.ttft_ms; };
  const auto tpot = [](const Replica& x) -> const std::vector<double>& { return x.tpot_ms; };
  r.ttft_p99 = mixture_percentile(replicas, o.serving, 99, ttft);
  r.ttft_p50 = mixture_percentile(replicas, o.serving, 50, ttft);
  r.tpot_p99 = mixture_percentile(replicas, o.serving, 99, tpot);
  double capacity = 0;
  for (std::size_t a = 0; a < 3; ++a) {
    capacity += static_cast<double>(o.serving[a]) * replicas[a].capacity_tokens_per_s;
  }
  r.capacity_per_scale_up = cycles > 0 ? capacity / cycles : 0;
  r.capacity_per_replica = n > 0 ? capacity / n : 0;
  return r;
}

nlohmann::json row_json(const Row& r) {
  return {{"qos", cluster::to_string(r.key.qos)},
          {"method", cluster::to_string(r.key.method)},
          {"alpha", r.key.alpha < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.key.alpha)},
          {"replicas", r.o.replicas},
          {"serving",
           {{"same-numa", r.o.serving[0]},
            {"same-socket", r.o.serving[1]},
            {"cross-socket", r.o.serving[2]}}},
          {"lost", {{"unplaced", r.o.unplaced}, {"refused", r.o.refused}}},
          {"hit_rate", round6(r.hit_rate)},
          {"victims_per_replica", round6(r.victims_per_replica)},
          {"ttft_ms", {{"p50", round6(r.ttft_p50)}, {"p99", round6(r.ttft_p99)}}},
          {"tpot_ms", {{"p99", round6(r.tpot_p99)}}},
          {"throughput_output_tokens_per_s",
           {{"per_scale_up", round6(r.capacity_per_scale_up)},
            {"per_replica_asked", round6(r.capacity_per_replica)}}}};
}

std::vector<std::string> row_cells(const Row& r) {
  return {std::string(cluster::to_string(r.key.method)),
          alpha_label(r.key.alpha),
          fmt::format("{:.1f}%", 100 * r.hit_rate),
          fmt::format("{}/{}/{}", r.o.serving[0], r.o.serving[1], r.o.serving[2]),
          fmt::format("{}", r.o.lost()),
          fmt::format("{:.2f}", r.victims_per_replica),
          fmt::format("{:.0f}", r.ttft_p99),
          fmt::format("{:.1f}", r.tpot_p99),
          fmt::format("{:.0f}", r.capacity_per_replica),
          fmt::format("{:.0f}", r.capacity_per_scale_up)};
}

nlohmann::json replica_json(const Replica& r) {
  const auto pct = [](const metrics::Percentiles& p) {
    return nlohmann::json{{"p50", round6(p.p50)}, {"p99", round6(p.p99)}, {"mean", round6(p.mean)}};
  };
  return {{"affinity", cluster::to_string(r.affinity)},
          {"penalty", r.penalty},
          {"requests", r.ttft_ms.size()},
          {"ttft_ms", pct(r.ttft)},
          {"tpot_ms", pct(r.tpot)},
          {"served_output_tokens_per_s", round6(r.served_tokens_per_s)},
          {"capacity",
           {{"output_tokens_per_s", round6(r.capacity_tokens_per_s)},
            {"requests_per_s", round6(r.capacity_requests_per_s)}}},
          {"prefill_2048",
           {{"ms", round6(r.prefill_ms)}, {"communication_share", round6(r.prefill_comm_share)}}},
          {"decode_8x2048",
           {{"ms", round6(r.decode_ms)}, {"communication_share", round6(r.decode_comm_share)}}}};
}

}  // namespace

core::Result<FlextopoResult> run_flextopo_serving(const FlextopoOptions& options) {
  return run_flextopo_serving(options, FlextopoServingPlan{});
}

core::Result<FlextopoResult> run_flextopo_serving(const FlextopoOptions& options,
                                                  const FlextopoServingPlan& plan) {
  if (plan.nodes < 1 || plan.cycles < 1 || plan.replicas < 1 || plan.capacity_requests < 1 ||
      plan.trace_share < 1 || plan.trace_window <= 0 || !(plan.trace_time_scale > 0)) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "flextopo-serving: nodes ({}), cycles ({}), replicas ({}), "
                       "capacity_requests ({}), trace_share ({}), trace_window ({} ns) and "
                       "trace_time_scale ({}) must all be positive",
                       plan.nodes, plan.cycles, plan.replicas, plan.capacity_requests,
                       plan.trace_share, plan.trace_window, plan.trace_time_scale);
  }
  for (const double a : plan.alphas) {
    if (!(a >= 0 && a <= 1)) {
      return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                         "flextopo-serving: alpha {} is outside [0, 1]", a);
    }
  }
  const std::uint64_t seed = options.seed.value_or(kDefaultSeed);
  const std::int64_t total = 3 + static_cast<std::int64_t>(plan.presets.size()) * plan.cycles * 2 *
                                     (1 + 2 * static_cast<std::int64_t>(plan.alphas.size()));
  std::int64_t done = 0;
  const auto tick = [&](std::string_view what) {
    ++done;
    if (options.progress) options.progress(done, total, what);
  };

  // Serving half: one replica per affinity.
  TESSERA_ASSIGN_OR_RETURN(const std::string trace,
                           core::with_context(data_file(kTraceFile), "flextopo-serving"));
  workload::TraceOptions topts;
  topts.time_scale = plan.trace_time_scale;
  topts.horizon =
      static_cast<core::Nanos>(static_cast<double>(plan.trace_window) * plan.trace_time_scale);
  TESSERA_ASSIGN_OR_RETURN(
      const auto whole,
      core::with_context(workload::load_trace(trace, topts), "flextopo-serving's request stream"));
  std::vector<workload::Request> stream;
  for (std::size_t i = 0; i < whole.size(); i += static_cast<std::size_t>(plan.trace_share)) {
    stream.push_back(whole[i]);
  }
  if (stream.empty()) {
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument,
                       "flextopo-serving: the trace window holds no request; widen trace_window");
  }
  std::vector<workload::Request> burst(
      stream.begin(),
      stream.begin() + std::min<std::ptrdiff_t>(plan.capacity_requests,
                                                static_cast<std::ptrdiff_t>(stream.size())));
  for (auto& r : burst) r.arrival = 0;
  TESSERA_ASSIGN_OR_RETURN(const workload::ModelConfig model, workload::find_model(kModel));
  std::vector<Replica> replicas;
  for (const Affinity a : kAffinities) {
    TESSERA_ASSIGN_OR_RETURN(auto r, run_replica(a, model, stream, burst));
    replicas.push_back(std::move(r));
    tick("serving");
  }

  FlextopoResult result;
  result.name = "flextopo-serving";
  nlohmann::json rows = nlohmann::json::array();
  std::string text = fmt::format(
      "flextopo-serving: FlexTopo (arXiv 2411.11560) preemption methods judged by serving, not by "
      "hit rate\n"
      "{} saturated nodes of 8x RTX 4090 servers ({}); {} cycles, each scaling an LLM service up "
      "by {} replicas of {} at tensor-parallel degree {}; seed {}\n\n",
      plan.nodes, fmt::join(plan.presets, ", "), plan.cycles, plan.replicas, kModel,
      kTensorParallel, seed);

  text += fmt::format(
      "One replica per placement, serving every {}th request of the first {:.0f} min of the Azure "
      "LLM code trace, time x{} ({} requests):\n",
      plan.trace_share, core::to_seconds(plan.trace_window) / 60, plan.trace_time_scale,
      stream.size());
  std::vector<std::vector<std::string>> rt{{"placement", "penalty", "prefill 2048 ms", "comm",
                                            "decode 8x2048 ms", "comm", "TTFT p50/p99 ms",
                                            "TPOT p50/p99 ms", "capacity tok/s"}};
  nlohmann::json rj = nlohmann::json::array();
  for (const auto& r : replicas) {
    rt.push_back(
        {std::string(cluster::to_string(r.affinity)), fmt::format("{}x", r.penalty),
         fmt::format("{:.1f}", r.prefill_ms), fmt::format("{:.0f}%", 100 * r.prefill_comm_share),
         fmt::format("{:.2f}", r.decode_ms), fmt::format("{:.0f}%", 100 * r.decode_comm_share),
         fmt::format("{:.0f}/{:.0f}", r.ttft.p50, r.ttft.p99),
         fmt::format("{:.1f}/{:.1f}", r.tpot.p50, r.tpot.p99),
         fmt::format("{:.0f}", r.capacity_tokens_per_s)});
    rj.push_back(replica_json(r));
  }
  text += align_columns(rt) + "\n";

  for (const std::string& preset : plan.presets) {
    TESSERA_ASSIGN_OR_RETURN(const auto outcomes,
                             run_cluster_half(plan, preset, seed, [&] { tick("preemption"); }));
    for (const Qos qos : kQos) {
      text += fmt::format(
          "{}, scale-up of {} replicas (hit: bound at one NUMA node; serving same-numa/same-socket/"
          "cross-socket summed over cycles; lost: {}; tok/s: saturated output tokens/s per replica "
          "asked for and per scale-up):\n",
          preset, cluster::to_string(qos),
          qos == Qos::kGuaranteed ? "not bound, or bound off its NUMA node and refused by kubelet"
                                  : "not bound");
      std::vector<std::vector<std::string>> t{{"method", "alpha", "hit", "serving n/s/x", "lost",
                                               "victims/replica", "TTFT p99 ms", "TPOT p99 ms",
                                               "tok/s/replica", "tok/s/scale-up"}};
      for (const auto& [k, o] : outcomes) {
        if (k.qos != qos) continue;
        const Row row = make_row(k, o, replicas, plan.cycles);
        t.push_back(row_cells(row));
        nlohmann::json j = row_json(row);
        j["preset"] = preset;
        rows.push_back(std::move(j));
      }
      text += align_columns(t) + "\n";
    }
  }
  text +=
      "The penalties are FlexTopo's own 4090 measurements (1.2x same socket, 3.2x across "
      "sockets), applied to the all-reduces' host-link time only; compute and DRAM time do not "
      "change with the placement. Replicas do not interact, and a lost replica's load is not "
      "moved to the others.\n";

  result.text = std::move(text);
  result.json = {{"experiment", "flextopo-serving"},
                 {"seed", seed},
                 {"presets", plan.presets},
                 {"nodes", plan.nodes},
                 {"cycles", plan.cycles},
                 {"replicas_per_scale_up", plan.replicas},
                 {"model", kModel},
                 {"tensor_parallel", kTensorParallel},
                 {"gpu", kGpu},
                 {"trace",
                  {{"file", kTraceFile},
                   {"window_s", core::to_seconds(plan.trace_window)},
                   {"time_scale", plan.trace_time_scale},
                   {"share", plan.trace_share},
                   {"requests", stream.size()}}},
                 {"replica_by_placement", rj},
                 {"rows", rows}};
  return result;
}

}  // namespace tessera::experiment
