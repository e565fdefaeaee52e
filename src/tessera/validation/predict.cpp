#include "tessera/validation/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/device/pipe_peak.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/gemm_shapes.hpp"
#include "tessera/workload/kernels/memory_bound.hpp"
#include "tessera/workload/models/tensor_parallel.hpp"

namespace tessera::validation {

namespace {

using workload::Kernel;
using workload::KernelClass;
using workload::KernelSequence;

std::unexpected<core::Error> row_error(const Measurement& m, std::string_view what) {
  return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument, "{}: {}", m.source, what);
}

std::string gemm_class(std::int64_t m) {
  if (m <= 64) return "GEMM, M <= 64";
  if (m <= 1024) return "GEMM, 64 < M <= 1024";
  return "GEMM, M > 1024";
}

bool is_gemm_kernel(std::string_view name) {
  return name == "qkv_proj" || name == "o_proj" || name == "gate_up_proj" || name == "down_proj" ||
         name == "lm_head" || name == "moe_router" || name == "moe_gate_up" || name == "moe_down";
}

std::int64_t rows_of(const Measurement& m) {
  if (m.phase == workload::Phase::kDecode) return static_cast<std::int64_t>(m.lengths.size());
  std::int64_t tokens = 0;
  for (int len : m.lengths) tokens += std::max(len, 1);
  return tokens;
}

bool selected(const Kernel& k, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (name == kAttentionKernels) {
      if (k.kind == KernelClass::kAttention || k.name == "paged_attention_v2_reduce") return true;
    } else if (k.name == name) {
      return true;
    }
  }
  return false;
}

workload::TensorParallel nvlink(const hw::GpuSpec& spec, int degree) {
  workload::TensorParallel tp;
  tp.degree = degree;
  if (spec.nvlink_bytes_per_s > 0) tp.link_bytes_per_s = spec.nvlink_bytes_per_s;
  return tp;
}

// "Pairwise" machines are PCIe boards (A100 PCIe, H100 PCIe or NVL) bridged in NVLink pairs.
// NVIDIA's datasheets give the two-way bridge as 600 GB/s over both directions, for the A100 and
// the H100 alike: 300 GB/s a direction, below the H100 SXM's 450. ASSUMPTION: a ring over more
// than two GPUs crosses PCIe between the pairs (Gen4 on Ampere, Gen5 on Hopper boards), peer to
// peer rather than staged through host memory, so that NCCL reaches the same fraction of its raw
// rate (link_bandwidth_fraction) as of NVLink's; the slowest link sets the ring's pace.
constexpr double kNvlinkBridgeBytesPerS = 300e9;

double pairwise_link(const hw::GpuSpec& spec, int gpus) {
  if (gpus <= 2) return std::min(spec.nvlink_bytes_per_s, kNvlinkBridgeBytesPerS);
  return spec.architecture == "Hopper" ? workload::kPcie5x16RawBytesPerS
                                       : workload::kPcie4x16RawBytesPerS;
}

}  // namespace

std::string category(const Measurement& m) {
  switch (m.kind) {
    case MeasuredKind::kGemm: return gemm_class(m.m);
    case MeasuredKind::kLayerKernels: {
      const bool gemms = !m.layer_kernels.empty() &&
                         std::ranges::all_of(m.layer_kernels, [](const std::string& name) {
                           return is_gemm_kernel(name);
                         });
      if (gemms) return gemm_class(rows_of(m));
      const bool attention = std::ranges::any_of(
          m.layer_kernels, [](const std::string& name) { return name == kAttentionKernels; });
      if (attention) {
        return m.phase == workload::Phase::kDecode ? "attention, decode" : "attention, prefill";
      }
      if (m.layer_kernels.size() == 1) {
        const std::string& k = m.layer_kernels.front();
        if (k == "embedding") return "embedding";
        if (k.ends_with("rmsnorm")) return "elementwise, norm";
        if (k == "rotary_embedding") return "elementwise, rotary";
        if (k == "silu_and_mul") return "elementwise, activation";
        if (k == "residual_add") return "elementwise, add";
      }
      return "elementwise";
    }
    case MeasuredKind::kStep:
      return m.phase == workload::Phase::kDecode ? "step, decode" : "step, prefill";
    case MeasuredKind::kCollective:
      return m.collective == Collective::kAllReduce ? "collective, all-reduce"
                                                    : "collective, send/recv";
  }
  return "other";
}

struct Predictor::Device {
  sim::Engine engine;
  std::unique_ptr<sim::SimGpu> gpu;
  device::StreamId stream{};
  std::uint64_t tag = 0;
};

Predictor::Predictor(sim::SimGpuOverrides overrides,
                     std::map<std::string, sim::SimGpuOverrides> per_gpu, bool calibrated,
                     std::map<std::string, workload::EngineCosts> engine,
                     std::map<std::string, HarnessCosts> harness)
    : overrides_(std::move(overrides)),
      per_gpu_(std::move(per_gpu)),
      calibrated_(calibrated),
      engine_(std::move(engine)),
      default_engine_(calibrated ? workload::default_engine_costs() : workload::kNoEngineCosts),
      harness_(std::move(harness)) {}
Predictor::~Predictor() = default;

std::optional<std::string> Predictor::unsupported(const Measurement& m) {
  if (m.kind == MeasuredKind::kLayerKernels && m.implementation == Implementation::kHfEager) {
    const bool linear_or_attention = std::ranges::all_of(
        m.layer_kernels, [](const std::string& n) { return is_gemm_kernel(n); });
    if (!linear_or_attention) {
      return "Hugging Face eager operators launch several unfused kernels each; the builders "
             "model vLLM's fused ones";
    }
  }
  return std::nullopt;
}

std::optional<std::string> Predictor::implausible(const Measurement& m) const {
  const auto seq = kernels(m);
  if (!seq) return std::nullopt;  // simulate_ns reports the error
  return implausible(m, *seq);
}

std::optional<std::string> Predictor::implausible(const Measurement& m,
                                                  const KernelSequence& seq) const {
  const auto spec = hw::find_gpu(m.gpu);
  if (!spec) return std::nullopt;  // simulate_ns reports the error
  double floor_ns = 0;
  for (const auto& group : seq.groups) {
    for (const Kernel& k : group.kernels) {
      const double peak = device::peak_flops(*spec, k.pipe);
      const double compute = peak > 0 ? k.total_flops() / peak * 1e9 : 0;
      const double memory = k.total_bytes() / spec->memory_bandwidth_bytes_per_s * 1e9;
      floor_ns += std::max(compute, memory) * group.repeat;
    }
  }
  if (m.measured_ns >= floor_ns) return std::nullopt;
  return fmt::format(
      "faster than the GPU's datasheet peaks allow for the work ({:.0f} us "
      "measured, at least {:.0f} us at peak FLOP/s and bandwidth)",
      m.measured_ns / 1e3, floor_ns / 1e3);
}

core::Result<Predictor::Device*> Predictor::device(const std::string& gpu,
                                                   std::optional<bool> gemm_stream_k) {
  const DeviceKey key{gpu, gemm_stream_k};
  auto it = devices_.find(key);
  if (it != devices_.end()) return it->second.get();
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(gpu));
  auto d = std::make_unique<Device>();
  const auto own = per_gpu_.find(spec.name);
  sim::SimGpuOverrides overrides = own != per_gpu_.end() ? own->second : overrides_;
  if (gemm_stream_k) overrides.gemm_stream_k = gemm_stream_k;
  const sim::SimGpuOptions options =
      calibrated_ ? sim::options_for(spec, overrides) : sim::apply(sim::SimGpuOptions{}, overrides);
  TESSERA_ASSIGN_OR_RETURN(d->gpu, sim::SimGpu::create(d->engine, spec, options));
  TESSERA_ASSIGN_OR_RETURN(d->stream, d->gpu->create_stream({}));
  Device* out = d.get();
  devices_.emplace(key, std::move(d));
  return out;
}

core::Result<double> Predictor::time_sequence(const std::string& gpu,
                                              const workload::KernelSequence& seq,
                                              std::optional<bool> gemm_stream_k) {
  TESSERA_ASSIGN_OR_RETURN(Device * d, device(gpu, gemm_stream_k));
  std::optional<device::SubmissionDone> done;
  TESSERA_TRY(d->gpu->submit(d->stream, std::make_shared<const KernelSequence>(seq), ++d->tag,
                             [&done](const device::SubmissionDone& s) { done = s; }));
  d->engine.run_until(core::kNever);
  if (!done) {
    return core::fail(core::Domain::kDevice, core::Code::kInternal,
                      "the simulated GPU went idle without finishing the submission");
  }
  return static_cast<double>(done->finished - done->started);
}

core::Result<KernelSequence> Predictor::kernels(const Measurement& m) const {
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(m.gpu));
  switch (m.kind) {
    case MeasuredKind::kGemm: {
      if (m.m < 1 || m.n < 1 || m.k < 1) {
        return row_error(m, fmt::format("GEMM sizes m={} n={} k={} must be >= 1", m.m, m.n, m.k));
      }
      KernelSequence seq;
      seq.groups.push_back({.kernels = {workload::make_gemm(
                                workload::dense_gemm("gemm", m.m, m.n, m.k, m.precision))},
                            .repeat = 1});
      return seq;
    }
    case MeasuredKind::kLayerKernels:
    case MeasuredKind::kStep: {
      if (m.lengths.empty()) return row_error(m, "no sequences (lengths is empty)");
      TESSERA_TRY(core::with_context(m.model.validate(), m.source));
      const workload::TensorParallel tp = nvlink(spec, m.tensor_parallel);
      TESSERA_TRY(core::with_context(workload::validate(m.model, tp), m.source));
      if (m.kind == MeasuredKind::kStep) {
        return m.phase == workload::Phase::kDecode
                   ? workload::tp_decode_step(m.model, tp, m.lengths)
                   : workload::tp_prefill_step(m.model, tp, m.lengths);
      }
      const workload::ModelConfig shard =
          tp.degree > 1 ? workload::shard(m.model, tp.degree) : m.model;
      const KernelSequence step = m.phase == workload::Phase::kDecode
                                      ? workload::decode_step(shard, m.lengths)
                                      : workload::prefill_step(shard, m.lengths);
      KernelSequence out;
      out.phase = step.phase;
      workload::KernelGroup picked;
      for (const auto& group : step.groups) {
        for (const Kernel& k : group.kernels) {
          if (selected(k, m.layer_kernels)) picked.kernels.push_back(k);
        }
        // One decoder layer: the first group holding a selected kernel (the layer group is
        // repeated, the others are not).
        if (!picked.kernels.empty()) break;
      }
      if (picked.kernels.empty()) {
        return row_error(
            m, fmt::format("the {} step's layer has none of the kernels [{}]",
                           workload::to_string(step.phase), fmt::join(m.layer_kernels, ", ")));
      }
      out.groups.push_back(std::move(picked));
      return out;
    }
    case MeasuredKind::kCollective: {
      if (m.gpus < 2 || m.bytes < 1) {
        return row_error(m, fmt::format("a collective needs >= 2 GPUs and >= 1 byte, got {} and {}",
                                        m.gpus, m.bytes));
      }
      workload::TensorParallel tp = nvlink(spec, m.gpus);
      if (m.interconnect == "nvlink-pairwise") tp.link_bytes_per_s = pairwise_link(spec, m.gpus);
      const std::int64_t elements = std::max<std::int64_t>(m.bytes / 2, 1);
      KernelSequence seq;
      Kernel k = m.collective == Collective::kAllReduce
                     ? workload::all_reduce("all_reduce", elements, 2, tp)
                     : workload::gather_to_first("send_recv", elements, 2, tp);
      if (m.collective == Collective::kSendRecv) {
        // One peer's whole message crosses the link in one step (gather_to_first sends (n-1)/n
        // of it in n-1).
        k.host_link_bytes_per_block = static_cast<double>(m.bytes) / static_cast<double>(k.blocks);
        k.link_steps = 1;
      }
      seq.groups.push_back({.kernels = {k}, .repeat = 1});
      return seq;
    }
  }
  return row_error(m, "unknown measurement kind");
}

core::Result<double> Predictor::simulate_ns(const Measurement& m) {
  TESSERA_ASSIGN_OR_RETURN(const KernelSequence seq, kernels(m));
  return simulate_ns(m, seq);
}

core::Result<double> Predictor::simulate_ns(const Measurement& m, const KernelSequence& seq) {
  if (m.kind == MeasuredKind::kStep) {
    TESSERA_ASSIGN_OR_RETURN(
        const double gpu_ns,
        core::with_context(time_sequence(m.gpu, seq, m.gemm_stream_k), m.source));
    return gpu_ns + engine_ns(m, engine_costs(m.gpu));
  }
  // Per-operator measurements are kernel times (a profiler's), so each kernel runs alone.
  double total = 0;
  for (const auto& group : seq.groups) {
    for (const Kernel& k : group.kernels) {
      KernelSequence one;
      one.groups.push_back({.kernels = {k}, .repeat = 1});
      TESSERA_ASSIGN_OR_RETURN(
          const double ns,
          core::with_context(time_sequence(m.gpu, one, m.gemm_stream_k), m.source));
      total += ns * group.repeat;
    }
  }
  if (m.host_timed_call) total += static_cast<double>(harness_costs(m.gpu).host_call);
  return total;
}

double Predictor::engine_ns(const Measurement& m, const workload::EngineCosts& costs) {
  if (m.kind != MeasuredKind::kStep) return 0;
  return static_cast<double>(costs.before_step(m.phase, m.tensor_parallel) +
                             costs.after_step(static_cast<int>(m.lengths.size())));
}

const workload::EngineCosts& Predictor::engine_costs(const std::string& gpu) const {
  const auto it = engine_.find(gpu);
  return it != engine_.end() ? it->second : default_engine_;
}

HarnessCosts Predictor::harness_costs(const std::string& gpu) const {
  if (const auto it = harness_.find(gpu); it != harness_.end()) return it->second;
  return calibrated_ ? default_harness_costs(gpu) : kNoHarnessCosts;
}

}  // namespace tessera::validation
