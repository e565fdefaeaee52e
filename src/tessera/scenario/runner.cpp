#include "tessera/scenario/runner.hpp"

#include <algorithm>
#include <memory>
#include <span>

#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/scenario/tenant_memory.hpp"
#include "tessera/tenant/inference_server.hpp"
#include "tessera/tenant/training_job.hpp"

namespace tessera::scenario {

namespace {

using core::Result;

// Routes one GPU's kernels to its own timeline process (exclusive mode runs several GPUs at once).
class TimelineTap final : public device::DeviceObserver {
 public:
  TimelineTap(metrics::Timeline& timeline, int process) : timeline_(timeline), process_(process) {}
  void on_kernel_complete(const device::KernelEvent& event) override {
    timeline_.set_current_process(process_);
    timeline_.on_kernel_complete(event);
  }

 private:
  metrics::Timeline& timeline_;
  int process_;
};

struct Gpu {
  std::unique_ptr<device::GpuDevice> device;
  std::unique_ptr<gpu::CheckedMode> mode;  // every mode runs under the determinism checker
  std::unique_ptr<TimelineTap> tap;
};

std::vector<gpu::TenantInfo> tenant_infos(const Scenario& s) {
  std::vector<gpu::TenantInfo> out;
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    const bool inference = t.kind == TenantSpec::Kind::kInference;
    out.push_back(gpu::TenantInfo{.id = static_cast<gpu::TenantId>(i),
                                  .name = t.name,
                                  .latency_critical = inference,
                                  .priority = t.priority,
                                  .sm_share = t.sm_share,
                                  .ttft_slo = inference ? t.inference.slo.ttft : 0,
                                  .tpot_slo = inference ? t.inference.slo.tpot : 0});
  }
  return out;
}

void add_counter(std::vector<std::pair<std::string, double>>& out, const gpu::ModeCounter& c) {
  for (auto& [name, value] : out) {
    if (name == c.name) {
      value += c.value;
      return;
    }
  }
  out.emplace_back(c.name, c.value);
}

// The memory a tenant runs in under a mode: its partition's own (a MIG instance), or the GPU's.
MemoryPool memory_pool(const Scenario& s, const std::vector<gpu::PartitionInfo>& parts,
                       gpu::TenantId id) {
  for (const auto& p : parts) {
    if (p.memory_bytes > 0 && std::ranges::find(p.tenants, id) != p.tenants.end()) {
      return MemoryPool{.bytes = p.memory_bytes, .name = fmt::format("MIG instance {}", p.name)};
    }
  }
  return MemoryPool{.bytes = s.gpu.memory_bytes, .name = fmt::format("the {}", s.gpu.name)};
}

// One timer at a time, each second's scheduling the next: an hour's 3,600 ticks queued up front
// would sit in the event queue and make every event of the run sift past them.
void report_progress_each_second(device::Executor& executor, const RunOptions& options,
                                 Progress& progress) {
  const core::Nanos next = executor.now() + core::kNanosPerSecond;
  if (next >= progress.duration) return;
  executor.schedule_at(next, [&executor, &options, &progress] {
    progress.simulated = executor.now();
    options.progress(progress);
    report_progress_each_second(executor, options, progress);
  });
}

// The requests summarize_inference counts: TTFT of those with a first token, TPOT of the
// completed ones.
metrics::LatencySamples latency_samples(std::span<const metrics::RequestRecord> records) {
  metrics::LatencySamples out;
  for (const metrics::RequestRecord& r : records) {
    if (r.first_token >= 0) out.ttft_ms.push_back(core::to_millis(r.ttft()));
    if (r.done()) out.tpot_ms.push_back(core::to_millis(r.tpot()));
  }
  return out;
}

// Arrivals are drawn once per scenario so every mode serves exactly the same requests.
Result<std::vector<std::vector<workload::Request>>> build_arrivals(const Scenario& s) {
  const core::RandomStreams streams(s.seed);
  std::vector<std::vector<workload::Request>> out(s.tenants.size());
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    if (t.kind != TenantSpec::Kind::kInference) continue;
    if (t.arrivals.kind == ArrivalSpec::Kind::kTrace) {
      workload::TraceOptions opts = t.arrivals.trace;
      opts.horizon = s.duration;
      TESSERA_ASSIGN_OR_RETURN(out[i],
                               core::with_context(workload::load_trace(t.arrivals.trace_path, opts),
                                                  fmt::format("tenant '{}'", t.name)));
    } else {
      TESSERA_ASSIGN_OR_RETURN(
          out[i], workload::generate_arrivals(t.arrivals.synthetic, s.duration, streams, t.name));
    }
  }
  return out;
}

// `backend_name` receives the name of the backend the mode ran on (for the report).
Result<metrics::ModeReport> run_mode(const Scenario& s, std::size_t mode_index,
                                     const std::vector<std::vector<workload::Request>>& arrivals,
                                     const RunOptions& options, std::string& backend_name) {
  const std::string& mode_name = s.modes[mode_index];
  const auto infos = tenant_infos(s);
  // Declared before the GPUs: it owns the clock they run on and must outlive them.
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<device::RunBackend> backend, options.backend(s));
  backend_name = backend->name();
  device::Executor& executor = backend->executor();
  metrics::Timeline* timeline = options.timeline;

  // Exclusive mode is the isolation reference: each tenant alone on a GPU of its own.
  const bool exclusive = mode_name == "exclusive";
  std::vector<Gpu> gpus(exclusive ? s.tenants.size() : 1);
  std::vector<gpu::SharingMode*> mode_of_tenant(s.tenants.size());
  std::vector<int> track_of_tenant(s.tenants.size(), -1);
  std::vector<TenantPlacement> memory(s.tenants.size());  // where each holds its memory, or why not
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    auto& slot = gpus[g];
    TESSERA_ASSIGN_OR_RETURN(slot.device, backend->make_gpu(s.gpu, static_cast<int>(g)));
    TESSERA_ASSIGN_OR_RETURN(auto inner, options.make_mode
                                             ? options.make_mode(mode_name, s.mode_options)
                                             : gpu::make_sharing_mode(mode_name, s.mode_options));
    slot.mode = std::make_unique<gpu::CheckedMode>(std::move(inner));
    const auto attached = exclusive ? std::span(infos).subspan(g, 1) : std::span(infos);
    TESSERA_TRY(core::with_context(slot.mode->attach(*slot.device, attached),
                                   fmt::format("mode '{}'", mode_name)));
    std::vector<gpu::TenantId> ids;
    std::vector<MemoryPool> pools;
    const auto parts = slot.mode->partitions();
    for (const auto& info : attached) {
      mode_of_tenant[info.id] = slot.mode.get();
      ids.push_back(info.id);
      pools.push_back(memory_pool(s, parts, info.id));
    }
    const auto placed = place_in_memory(s, ids, pools);
    for (std::size_t k = 0; k < ids.size(); ++k) memory[ids[k]] = placed[k];
    if (timeline) {
      const std::string process_name =
          exclusive ? fmt::format("{} / {} alone", mode_name, attached.front().name) : mode_name;
      const int process = timeline->add_process(process_name);
      for (const auto& info : attached) {
        track_of_tenant[info.id] = timeline->add_track(process, "tenant " + info.name);
      }
      for (const auto& part : slot.mode->partitions()) {
        const int track = timeline->add_track(process, "partition " + part.name);
        timeline->route_domain(process, part.bandwidth_domain, track);
      }
      slot.tap = std::make_unique<TimelineTap>(*timeline, process);
      slot.device->add_observer(slot.tap.get());
    }
  }

  std::vector<std::unique_ptr<tenant::InferenceServer>> servers(s.tenants.size());
  std::vector<std::unique_ptr<tenant::TrainingJob>> jobs(s.tenants.size());
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    const auto id = static_cast<gpu::TenantId>(i);
    if (!memory[i].out_of_memory.empty()) continue;  // attached to its mode, but never submits
    if (t.kind == TenantSpec::Kind::kInference) {
      tenant::InferenceConfig config = t.inference;
      if (memory[i].serving) config.kv_cache = memory[i].serving->cache;
      servers[i] = std::make_unique<tenant::InferenceServer>(
          id, config, arrivals[i], *mode_of_tenant[i], executor, timeline, track_of_tenant[i]);
      servers[i]->start();
    } else {
      jobs[i] = std::make_unique<tenant::TrainingJob>(id, t.training, *mode_of_tenant[i], executor,
                                                      timeline, track_of_tenant[i]);
      jobs[i]->start();
    }
  }

  Progress progress{mode_name, mode_index, s.modes.size(), 0, s.duration};
  if (options.progress) report_progress_each_second(executor, options, progress);
  TESSERA_TRY(backend->run_until(s.duration));
  if (options.progress) {
    progress.simulated = s.duration;
    options.progress(progress);
  }
  // A run that broke the determinism invariant has no results worth reporting.
  for (auto& g : gpus) TESSERA_TRY(g.mode->verdict());

  metrics::ModeReport report;
  report.mode = mode_name;
  report.simulated = s.duration;
  report.gpus = static_cast<int>(gpus.size());
  for (const auto& g : gpus) {
    const auto st = g.device->stats();
    report.device.elapsed = st.elapsed;
    report.device.energy_joules += st.energy_joules;
    report.device.average_power_watts += st.average_power_watts;
    report.device.kernels_completed += st.kernels_completed;
    report.device.sm_busy_fraction += st.sm_busy_fraction / static_cast<double>(gpus.size());
    for (const auto& c : g.mode->counters()) add_counter(report.counters, c);
  }
  for (std::size_t i = 0; i < s.tenants.size(); ++i) {
    const auto& t = s.tenants[i];
    metrics::TenantReport tr;
    tr.name = t.name;
    if (!memory[i].out_of_memory.empty()) {
      const bool inference = t.kind == TenantSpec::Kind::kInference;
      tr.kind = inference ? "inference" : "training";
      tr.model = inference ? t.inference.model.name : t.training.model.name;
      if (inference) tr.slo = t.inference.slo;
      tr.out_of_memory = memory[i].out_of_memory;
    } else if (servers[i]) {
      if (const auto& f = servers[i]->failure()) return std::unexpected(*f);
      tr.kind = "inference";
      tr.model = t.inference.model.name;
      tr.slo = t.inference.slo;
      tr.inference =
          metrics::summarize_inference(servers[i]->records(), t.inference.slo, s.duration);
      if (options.keep_samples) tr.samples = latency_samples(servers[i]->records());
      if (const auto& m = memory[i].serving) {
        const auto kv = servers[i]->kv_stats();
        tr.memory = metrics::MemoryReport{.budget = m->budget,
                                          .weights = m->weights,
                                          .activations = m->activations,
                                          .kv_cache = m->kv_cache,
                                          .kv_blocks = m->cache.blocks,
                                          .block_size = m->cache.block_size,
                                          .peak_used_blocks = kv.peak_used_blocks,
                                          .preemptions = kv.preemptions,
                                          .rejected = kv.rejected};
      }
    } else {
      if (const auto& f = jobs[i]->failure()) return std::unexpected(*f);
      tr.kind = "training";
      tr.model = t.training.model.name;
      tr.training =
          metrics::summarize_training(jobs[i]->iterations(), jobs[i]->batch(), s.duration);
    }
    report.tenants.push_back(std::move(tr));
  }
  return report;
}

}  // namespace

Result<metrics::RunReport> run_scenario(const Scenario& scenario, const RunOptions& options) {
  if (!options.backend) {
    return core::fail(core::Domain::kScenario, core::Code::kInvalidArgument,
                      "run options name no backend: the caller chooses where the modes run (the "
                      "simulated GPU or real GPUs)");
  }
  TESSERA_ASSIGN_OR_RETURN(const auto arrivals, build_arrivals(scenario));
  metrics::RunReport report;
  report.scenario = scenario.name;
  report.gpu = scenario.gpu.name;
  report.seed = scenario.seed;
  for (std::size_t m = 0; m < scenario.modes.size(); ++m) {
    TESSERA_ASSIGN_OR_RETURN(auto mode_report,
                             run_mode(scenario, m, arrivals, options, report.backend));
    report.modes.push_back(std::move(mode_report));
  }
  return report;
}

}  // namespace tessera::scenario
