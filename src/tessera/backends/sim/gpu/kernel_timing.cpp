#include "tessera/backends/sim/gpu/kernel_timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tessera::sim {

namespace {

// Slack for rounding ratios that are whole numbers up to floating-point error (64 / 32 computed
// as 2.0000000000000004 must not become 3 rounds).
constexpr double kRoundingSlack = 1e-9;

// std::ceil is a library call on baseline x86-64 (no SSE4.1 rounding instruction), and this runs
// several times per kernel; for the non-negative values below 2^52 used here a truncating
// conversion gives the same result.
double ceil_non_negative(double x) {
  if (!(x < 0x1p52)) return std::ceil(x);
  const auto t = static_cast<double>(static_cast<std::int64_t>(x));
  return t < x ? t + 1 : t;
}

double ceil_whole(double x) {
  return x <= 0 ? 0 : ceil_non_negative(x - kRoundingSlack);
}

}  // namespace

TimingModel::TimingModel(const hw::GpuSpec& spec, const SimGpuOptions& options) {
  const double boost_hz = spec.boost_clock_mhz * 1e6;
  const double frac = options.achievable_compute_fraction;
  const auto ns_per_flop = [&](double flops_per_sm_per_cycle) {
    return flops_per_sm_per_cycle > 0 ? 1e9 / (flops_per_sm_per_cycle * boost_hz * frac) : 0.0;
  };
  tensor_ns_per_flop_ = ns_per_flop(spec.fp16_tensor_flops_per_sm_per_cycle());
  fp32_ns_per_flop_ = ns_per_flop(spec.fp32_flops_per_sm_per_cycle());
  device_bandwidth_ =
      spec.memory_bandwidth_bytes_per_s * options.achievable_bandwidth_fraction / 1e9;
  per_sm_bandwidth_ =
      options.sm_bandwidth_multiple * device_bandwidth_ / static_cast<double>(spec.sms);
  overhead_ns_ = static_cast<double>(options.launch_overhead);
}

KernelShape TimingModel::shape(const workload::Kernel& kernel) const {
  KernelShape s;
  const double ns_per_flop =
      kernel.pipe == workload::ComputePipe::kTensorFp16 ? tensor_ns_per_flop_ : fp32_ns_per_flop_;
  s.block_ns_at_boost = kernel.flops_per_block * ns_per_flop;
  s.bytes_per_block = kernel.bytes_per_block;
  if (kernel.host_link_bytes_per_block > 0) {
    s.link_ns_per_block = kernel.host_link_bytes_per_block * 1e9 / kernel.host_link_bytes_per_s;
  }
  return s;
}

int TimingModel::sms_wanted(double blocks) {
  return static_cast<int>(ceil_whole(blocks));
}

Plan TimingModel::plan(const KernelShape& shape, double blocks, int sms, double domain_bandwidth,
                       double overhead_ns) const {
  Plan p;
  p.blocks = blocks;
  p.sms = sms;
  p.compute_ns_at_boost = ceil_whole(blocks / sms) * shape.block_ns_at_boost;
  p.bytes = blocks * shape.bytes_per_block;
  p.overhead_ns = overhead_ns;
  p.memory_ns = memory_ns(p, domain_bandwidth);
  if (shape.link_ns_per_block > 0) p.link_ns = blocks * shape.link_ns_per_block;
  return p;
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

core::Nanos remaining_ns(double fraction_left, double duration_ns, double share) {
  // (Dividing by a share of exactly 1 is skipped: it is the common case, and exact either way.)
  const double ns = share == 1 ? fraction_left * duration_ns : fraction_left * duration_ns / share;
  if (!(ns > 0)) return 0;
  // Far beyond any run; keeps the conversion defined.
  if (ns >= 4e18) return core::kNever / 2;
  return static_cast<core::Nanos>(ns <= 1e-6 ? 0 : ceil_non_negative(ns - 1e-6));
}

}  // namespace tessera::sim
