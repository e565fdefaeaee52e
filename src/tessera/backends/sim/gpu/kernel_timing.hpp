#pragma once
// The time model of one kernel on a set of SMs (the arithmetic, apart from the scheduler).
//
// Compute: one block alone on an SM takes t_b = flops_per_block / (the SM's peak for the kernel's
// pipe at clock f x achievable_compute_fraction); blocks resident together share the SM, so an SM
// finishes one block per t_b whatever its occupancy. R blocks on n SMs take ceil(R / n) x t_b:
// a full wave of n x bps blocks takes bps x t_b and a partial last wave takes as many t_b as the
// busiest SM has blocks (wave quantization). The per-SM peak per cycle is the spec's device peak
// at the boost clock divided by (SMs x boost clock), so compute time scales as f_boost / f.
//
// Memory: R x bytes_per_block / min(domain bandwidth, n x per-SM cap), with the per-SM cap
// sm_bandwidth_multiple x (achievable device bandwidth / SMs).
//
// Host link: a kernel that moves host_link_bytes_per_block over the host link (a PCIe all-reduce
// between GPUs without peer-to-peer) spends R x those bytes / its link rate on top, serially: the
// transfer is neither overlapped with its compute nor shared with other kernels (one stream of a
// tensor-parallel server talks to the link at a time). 0 for every other kernel, whose timing the
// term leaves bit-identical. Like the overhead, it is part of the fluid duration, so DRAM
// contention stretches it too (a simplification; no sharing mode runs beside such a server here).
//
// Uncontended duration: launch overhead + max(compute, memory) + link. Its demand is the
// bandwidth it draws on average over that duration; the bandwidth sharer (bandwidth.hpp) may grant
// less. The model is fluid: a kernel progresses through the whole duration at one rate, so the
// overhead is spread over it (its draw is averaged over it, and contention stretches it with the
// rest). The overhead is a few microseconds next to kernels of tens to thousands; a
// simplification.

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "tessera/backends/sim/gpu/rounding.hpp"
#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/core/time.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::sim {

// What the model needs of a kernel, computed once per launch.
struct KernelShape {
  double block_ns_at_boost = 0;  // t_b at the boost clock
  double bytes_per_block = 0;
  double link_ns_per_block = 0;  // host-link time of one block
  // A GEMM timed as a library tiles it (SimGpuOptions::gemm_tile_selection); m = 0 otherwise.
  workload::GemmProblem gemm{};
  workload::ComputePipe pipe = workload::ComputePipe::kFp32;
  double grid_blocks = 1;  // the launched grid: a plan of B blocks covers B / grid of the GEMM
  double work_scale = 1;   // share of each block's work still to do (below 1 after a yield)
  double fixed_ns = 0;     // the kernel's own latency on top of the launch overhead
};

// The timing of a kernel's unfinished work on a fixed number of SMs. Progress through a plan is
// tracked as the fraction left; a plan is redrawn only when the kernel's SM count changes.
struct Plan {
  double blocks = 0;  // unfinished blocks the plan covers (fractional after a re-plan)
  int sms = 0;
  double compute_ns_at_boost = 0;  // whole rounds x t_b at the boost clock
  double memory_ns = 0;            // DRAM time with the domain to itself
  double overhead_ns = 0;          // launch overhead not yet spent
  double bytes = 0;
  double link_ns = 0;  // host-link transfer time of the blocks covered
};

// A plan's rates at one clock.
struct PlanRates {
  double duration_ns = 0;    // uncontended: overhead + max(compute, memory) + link
  double demand = 0;         // bytes per ns drawn on average over duration_ns
  double compute_share = 0;  // fraction of duration_ns the SMs spend computing
};

class TimingModel {
 public:
  TimingModel(const hw::GpuSpec& spec, const SimGpuOptions& options);

  KernelShape shape(const workload::Kernel& kernel) const;
  // SMs a kernel with `blocks` unfinished blocks can use: one per block. The hardware block
  // scheduler spreads a grid across SMs before it stacks blocks on one, and in this throughput
  // model blocks on one SM share its throughput, so spreading is never slower. Occupancy
  // (blocks_per_sm) decides whether a launch is valid, not how fast it runs: latency hiding is
  // not modelled.
  static int sms_wanted(double blocks) { return static_cast<int>(ceil_whole(blocks)); }
  Plan plan(const KernelShape& shape, double blocks, int sms, double domain_bandwidth,
            double overhead_ns) const;
  // The memory term of `plan` in a domain of `domain_bandwidth` (bytes per ns).
  double memory_ns(const Plan& plan, double domain_bandwidth) const;
  static PlanRates rates(const Plan& plan, double clock_ratio);

  double launch_overhead_ns() const { return overhead_ns_; }

  // The library's choice for a whole GEMM on `sms` SMs in a domain of `domain_bandwidth`: its
  // compute time at the boost clock and its DRAM bytes (split-K partial sums included).
  struct GemmChoice {
    double compute_ns_at_boost = 0;
    double bytes = 0;
    int tile_m = 0;
    int tile_n = 0;
    int split_k = 1;  // 0: Stream-K
  };
  GemmChoice gemm_choice(const KernelShape& shape, int sms, double domain_bandwidth) const;
  // Achievable device bandwidth, bytes per ns.
  double device_bandwidth() const { return device_bandwidth_; }

 private:
  // Per SM, at the boost clock, at the achievable fraction; indexed by workload::ComputePipe.
  std::array<double, 4> ns_per_flop_{};
  std::array<double, 4> peak_ns_per_flop_{};  // the same at the pipe's peak
  double attention_ns_per_flop_ = 0;          // tensor attention kernels; 0: ns_per_flop_
  bool gemm_tile_selection_ = false;
  bool gemm_stream_k_ = false;
  double gemm_fraction_ = 1;
  double gemm_knee_ = 0;
  double gemm_fixed_ns_ = 0;
  double collective_latency_ns_ = 0;
  // Per workload::KernelClass: achievable over the class's bandwidth fraction (1 for kernels that
  // stream at the achievable fraction).
  std::array<double, workload::kKernelClasses> byte_scale_{};
  double link_fraction_ = 1;
  // Decode and prefill steps repeat the same GEMMs on the same SMs, so choices are remembered.
  struct GemmKey {
    std::int64_t m, n, k, groups;
    int pipe, sms;
    double bandwidth;
    double operand_bytes;  // GEMMs of one shape move different bytes (a convolution's im2col)
    bool operator==(const GemmKey&) const = default;
  };
  struct GemmKeyHash {
    std::size_t operator()(const GemmKey& k) const;
  };
  mutable std::unordered_map<GemmKey, GemmChoice, GemmKeyHash> gemm_choices_;
  double device_bandwidth_;
  double per_sm_bandwidth_;
  double overhead_ns_;
};

// Whole nanoseconds until a plan with `fraction_left` finishes at `share` of its demand. Rounded
// up (less a hair of floating-point slack), so a kernel never ends before its work is done.
inline core::Nanos remaining_ns(double fraction_left, double duration_ns, double share) {
  // (Dividing by a share of exactly 1 is skipped: it is the common case, and exact either way.)
  const double ns = share == 1 ? fraction_left * duration_ns : fraction_left * duration_ns / share;
  if (!(ns > 0)) return 0;
  // Far beyond any run; keeps the conversion defined.
  if (ns >= 4e18) return core::kNever / 2;
  return static_cast<core::Nanos>(ns <= 1e-6 ? 0 : ceil_non_negative(ns - 1e-6));
}

}  // namespace tessera::sim
