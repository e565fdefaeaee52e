#include "tessera/backends/sim/gpu/kernel_timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tessera/backends/sim/gpu/rounding.hpp"
#include "tessera/device/pipe_peak.hpp"

namespace tessera::sim {

namespace {

bool elementwise_class(workload::KernelClass c) {
  using workload::KernelClass;
  return c == KernelClass::kNorm || c == KernelClass::kElementwise ||
         c == KernelClass::kPointwise || c == KernelClass::kEmbedding ||
         c == KernelClass::kReduction || c == KernelClass::kSampling ||
         c == KernelClass::kOptimizer;
}

}  // namespace

TimingModel::TimingModel(const hw::GpuSpec& spec, const SimGpuOptions& options) {
  const double boost_hz = spec.boost_clock_mhz * 1e6;
  const double frac = options.achievable_compute_fraction;
  const auto ns_per_flop = [&](double flops_per_sm_per_cycle) {
    return flops_per_sm_per_cycle > 0 ? 1e9 / (flops_per_sm_per_cycle * boost_hz * frac) : 0.0;
  };
  const double per_sm_cycle = static_cast<double>(spec.sms) * boost_hz;
  for (const auto pipe : {workload::ComputePipe::kTensorFp16, workload::ComputePipe::kFp32,
                          workload::ComputePipe::kTensorFp8, workload::ComputePipe::kTensorTf32}) {
    const double per_cycle = device::peak_flops(spec, pipe) / per_sm_cycle;
    ns_per_flop_[static_cast<std::size_t>(pipe)] = ns_per_flop(per_cycle);
    peak_ns_per_flop_[static_cast<std::size_t>(pipe)] =
        per_cycle > 0 ? 1e9 / (per_cycle * boost_hz) : 0.0;
  }
  if (options.attention_compute_fraction > 0) {
    attention_ns_per_flop_ =
        peak_ns_per_flop_[static_cast<std::size_t>(workload::ComputePipe::kTensorFp16)] /
        options.attention_compute_fraction;
  }
  gemm_tile_selection_ = options.gemm_tile_selection;
  gemm_stream_k_ = options.gemm_stream_k;
  gemm_fraction_ =
      gemm_stream_k_ ? options.stream_k_compute_fraction : options.gemm_compute_fraction;
  gemm_knee_ = gemm_stream_k_ ? options.stream_k_tile_knee : options.gemm_tile_knee;
  gemm_fixed_ns_ =
      static_cast<double>(gemm_stream_k_ ? options.stream_k_fixed : options.gemm_fixed);
  collective_latency_ns_ = static_cast<double>(options.collective_latency);
  // A memory-bound kernel at a fraction f of peak moves achievable / f times its bytes' worth of
  // DRAM time; 0 falls back to the broader fraction.
  const double elementwise = options.elementwise_bandwidth_fraction > 0
                                 ? options.elementwise_bandwidth_fraction
                                 : options.achievable_bandwidth_fraction;
  const auto scale = [&](double fraction) {
    return options.achievable_bandwidth_fraction / (fraction > 0 ? fraction : elementwise);
  };
  byte_scale_.fill(1);
  for (std::size_t c = 0; c < byte_scale_.size(); ++c) {
    if (elementwise_class(static_cast<workload::KernelClass>(c))) byte_scale_[c] = scale(0);
  }
  byte_scale_[static_cast<std::size_t>(workload::KernelClass::kPointwise)] =
      scale(options.pointwise_bandwidth_fraction);
  byte_scale_[static_cast<std::size_t>(workload::KernelClass::kEmbedding)] =
      scale(options.gather_bandwidth_fraction);
  byte_scale_[static_cast<std::size_t>(workload::KernelClass::kNorm)] =
      scale(options.norm_bandwidth_fraction);
  if (options.attention_bandwidth_fraction > 0) {
    byte_scale_[static_cast<std::size_t>(workload::KernelClass::kAttention)] =
        options.achievable_bandwidth_fraction / options.attention_bandwidth_fraction;
  }
  link_fraction_ = options.link_bandwidth_fraction;
  device_bandwidth_ =
      spec.memory_bandwidth_bytes_per_s * options.achievable_bandwidth_fraction / 1e9;
  per_sm_bandwidth_ =
      options.sm_bandwidth_multiple * device_bandwidth_ / static_cast<double>(spec.sms);
  overhead_ns_ = static_cast<double>(options.launch_overhead);
}

KernelShape TimingModel::shape(const workload::Kernel& kernel) const {
  KernelShape s;
  double ns_per_flop = ns_per_flop_[static_cast<std::size_t>(kernel.pipe)];
  if (attention_ns_per_flop_ > 0 && kernel.kind == workload::KernelClass::kAttention &&
      kernel.pipe == workload::ComputePipe::kTensorFp16) {
    ns_per_flop = attention_ns_per_flop_;
  }
  s.block_ns_at_boost = kernel.flops_per_block * ns_per_flop;
  s.pipe = kernel.pipe;
  s.grid_blocks = static_cast<double>(kernel.blocks);
  if (gemm_tile_selection_ && kernel.gemm.m > 0) {
    s.gemm = kernel.gemm;
    s.fixed_ns = gemm_fixed_ns_;
  }
  s.bytes_per_block = kernel.bytes_per_block;
  // (A scale of exactly 1 is skipped so that the default stays bit-identical.)
  if (const double scale = byte_scale_[static_cast<std::size_t>(kernel.kind)]; scale != 1) {
    s.bytes_per_block *= scale;
  }
  if (kernel.host_link_bytes_per_block > 0) {
    s.link_ns_per_block = kernel.host_link_bytes_per_block * 1e9 / kernel.host_link_bytes_per_s;
    // (Dividing by a fraction of exactly 1 is skipped so that the default stays bit-identical.)
    if (link_fraction_ != 1) s.link_ns_per_block /= link_fraction_;
  }
  if (kernel.link_steps > 0) s.fixed_ns = kernel.link_steps * collective_latency_ns_;
  return s;
}

Plan TimingModel::plan(const KernelShape& shape, double blocks, int sms, double domain_bandwidth,
                       double overhead_ns) const {
  Plan p;
  p.blocks = blocks;
  p.sms = sms;
  if (shape.gemm.m > 0) {
    // The library's tiling of the whole GEMM on these SMs; the plan covers its share of it.
    const GemmChoice& c = gemm_choice(shape, sms, domain_bandwidth);
    const double share = blocks / shape.grid_blocks * shape.work_scale;
    p.compute_ns_at_boost = share * c.compute_ns_at_boost;
    p.bytes = share * c.bytes;
  } else {
    p.compute_ns_at_boost = ceil_whole(blocks / sms) * shape.block_ns_at_boost;
    p.bytes = blocks * shape.bytes_per_block;
  }
  p.overhead_ns = overhead_ns;
  p.memory_ns = memory_ns(p, domain_bandwidth);
  if (shape.link_ns_per_block > 0) p.link_ns = blocks * shape.link_ns_per_block;
  return p;
}

namespace {

// Output tiles the library chooses among (CUTLASS's and cuBLAS's common tensor-op tiles), the
// split-K factors, and the shallowest K slice a split may leave (four 64-deep stages).
constexpr std::array<std::array<int, 2>, 6> kGemmTiles{
    {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};
constexpr std::array<int, 5> kSplits{1, 2, 4, 8, 16};
constexpr std::int64_t kMinKPerSlice = 256;
constexpr double kPartialSumBytes = 4;  // FP32 workspace
// A Stream-K kernel hands each SM an equal run of 64-deep K iterations over all tiles.
constexpr std::int64_t kStreamKDepth = 64;

double tile_intensity(int tm, int tn) {
  return static_cast<double>(tm) * tn / (tm + tn);
}

}  // namespace

std::size_t TimingModel::GemmKeyHash::operator()(const GemmKey& k) const {
  std::size_t h = std::hash<std::int64_t>{}(k.m);
  const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<std::int64_t>{}(k.n));
  mix(std::hash<std::int64_t>{}(k.k));
  mix(std::hash<std::int64_t>{}(k.groups));
  mix(std::hash<int>{}(k.pipe * 4099 + k.sms));
  mix(std::hash<double>{}(k.bandwidth));
  mix(std::hash<double>{}(k.operand_bytes));
  return h;
}

TimingModel::GemmChoice TimingModel::gemm_choice(const KernelShape& shape, int sms,
                                                 double domain_bandwidth) const {
  const GemmKey key{.m = shape.gemm.m,
                    .n = shape.gemm.n,
                    .k = shape.gemm.k,
                    .groups = shape.gemm.groups,
                    .pipe = static_cast<int>(shape.pipe),
                    .sms = sms,
                    .bandwidth = domain_bandwidth,
                    .operand_bytes = shape.gemm.operand_bytes};
  if (const auto it = gemm_choices_.find(key); it != gemm_choices_.end()) return it->second;
  const double m = static_cast<double>(shape.gemm.m);
  const double n = static_cast<double>(shape.gemm.n);
  const double peak_ns = peak_ns_per_flop_[static_cast<std::size_t>(shape.pipe)];
  const double bandwidth = std::min(domain_bandwidth, std::max(sms, 1) * per_sm_bandwidth_);
  const double reference = tile_intensity(kGemmTiles[0][0], kGemmTiles[0][1]);
  GemmChoice best;
  double best_ns = -1;
  for (const auto& [tm, tn] : kGemmTiles) {
    const double intensity = tile_intensity(tm, tn);
    const double efficiency = gemm_fraction_ * intensity / (intensity + gemm_knee_) *
                              (reference + gemm_knee_) / reference;
    const std::int64_t tiles =
        shape.gemm.groups * ((shape.gemm.m + tm - 1) / tm) * ((shape.gemm.n + tn - 1) / tn);
    const auto consider = [&](double compute, double bytes, int split) {
      const double total = std::max(compute, bytes / bandwidth);
      if (best_ns < 0 || total < best_ns) {
        best_ns = total;
        best = {.compute_ns_at_boost = compute,
                .bytes = bytes,
                .tile_m = tm,
                .tile_n = tn,
                .split_k = split};
      }
    };
    for (const int split : kSplits) {
      // A grouped GEMM is not split (vLLM's fused MoE kernel has no split-K).
      if (split > 1 && (shape.gemm.groups > 1 || shape.gemm.k / split < kMinKPerSlice)) break;
      const std::int64_t slice = (shape.gemm.k + split - 1) / split;
      const double waves = ceil_whole(static_cast<double>(tiles * split) / std::max(sms, 1));
      const double tile_ns = 2.0 * tm * tn * static_cast<double>(slice) * peak_ns / efficiency;
      consider(waves * tile_ns,
               shape.gemm.operand_bytes + 2.0 * (split - 1) * m * n * kPartialSumBytes, split);
    }
    // Stream-K: no partial last wave. The tiles an SM's run starts or ends inside are fixed up
    // through a workspace of partial sums (written once, read once); grouped GEMMs have none.
    if (gemm_stream_k_ && shape.gemm.groups == 1) {
      const std::int64_t iterations = (shape.gemm.k + kStreamKDepth - 1) / kStreamKDepth;
      const double per_sm = ceil_whole(static_cast<double>(tiles * iterations) / std::max(sms, 1));
      const double iteration_ns = 2.0 * tm * tn * kStreamKDepth * peak_ns / efficiency;
      const double split_tiles = tiles % std::max(sms, 1) == 0
                                     ? 0
                                     : static_cast<double>(std::min<std::int64_t>(tiles, sms));
      consider(per_sm * iteration_ns,
               shape.gemm.operand_bytes + 2.0 * split_tiles * tm * tn * kPartialSumBytes, 0);
    }
  }
  gemm_choices_.emplace(key, best);
  return best;
}

double TimingModel::memory_ns(const Plan& plan, double domain_bandwidth) const {
  if (plan.bytes <= 0) return 0;
  return plan.bytes / std::min(domain_bandwidth, plan.sms * per_sm_bandwidth_);
}

PlanRates TimingModel::rates(const Plan& plan, double clock_ratio) {
  const double compute = plan.compute_ns_at_boost / clock_ratio;
  PlanRates r;
  r.duration_ns = plan.overhead_ns + std::max(compute, plan.memory_ns);
  // Only kernels with host traffic add the term, so every other duration stays bit-identical.
  if (plan.link_ns > 0) r.duration_ns += plan.link_ns;
  if (r.duration_ns > 0) {
    const double per_ns = 1 / r.duration_ns;
    r.demand = plan.bytes * per_ns;
    r.compute_share = compute * per_ns;
  }
  return r;
}

}  // namespace tessera::sim
