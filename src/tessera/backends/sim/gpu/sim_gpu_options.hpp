#pragma once
// The simulated GPU's model assumptions. None of these is a datasheet fact: each default is a
// first-order guess, labelled ASSUMPTION, to be checked against a real GPU when one is available
// (the same kernels timed for real). Scenarios override them in their `sim:` section.

#include <optional>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::sim {

struct SimGpuOptions {
  // ASSUMPTION: the fraction of an SM's peak FLOP/s (for the kernel's pipe) one block reaches when
  // it has the SM to itself. Tuned GEMM libraries report roughly 70-80% of dense peak on large
  // problems; 0.7 is taken as typical, not measured.
  double achievable_compute_fraction = 0.7;

  // ASSUMPTION: the fraction of peak DRAM bandwidth that streaming kernels reach. STREAM-like
  // copies are commonly reported at 85-92% of the datasheet figure on HBM GPUs; 0.9 is assumed.
  double achievable_bandwidth_fraction = 0.9;

  // The fraction memory-bound elementwise kernels (norms, activations, residual adds, embedding
  // gathers, sampling, optimizer updates) reach, which is below the streaming figure: short rows,
  // several passes over small tensors, conversions. It scales their DRAM bytes, so contention
  // sees the bandwidth they occupy. 0: achievable_bandwidth_fraction.
  double elementwise_bandwidth_fraction = 0;
  // The same for the kinds whose kernels stream differently (workload::KernelClass): pointwise
  // passes over flat tensors (a residual add), which vectorize and reach about the STREAM figure;
  // row gathers (an embedding lookup), which move one element per thread at an index computed per
  // element; and norms, whose blocks stop at a block-wide reduction between their two passes
  // over a row. 0: elementwise_bandwidth_fraction.
  double pointwise_bandwidth_fraction = 0;
  double gather_bandwidth_fraction = 0;
  double norm_bandwidth_fraction = 0;

  // ASSUMPTION: one SM can draw at most this multiple of its even share of the (achievable)
  // device bandwidth, so about half the SMs can saturate DRAM at the default of 2.0. Per-SM load
  // bandwidth is bounded by its L1/LSU path and outstanding misses; the multiple is a guess to be
  // measured on a GPU (a streaming kernel on 1..N SMs).
  double sm_bandwidth_multiple = 2.0;

  // ASSUMPTION: time a kernel spends on launch and grid drain, added to every kernel (a few
  // microseconds is the commonly quoted launch latency on the CUDA driver).
  core::Nanos launch_overhead = core::micros(3);

  // The host thread that launches a stream's kernels (ASSUMPTION: one per stream, launching a
  // submission's kernels back to back from when it is submitted, asynchronously, with no limit on
  // how far it runs ahead). A kernel cannot start before the host has launched it: host_launch
  // is its CPU time per eager launch, graph_launch per launch of a submission captured as a CUDA
  // graph (workload::KernelSequence::graph), which launches every kernel of it at once. 0 (the
  // default): the host always keeps ahead of the GPU. Figures: PyTorch's CPU launch time
  // "is between 5-20 microseconds" (HolisticTraceAnalysis docs, "CUDA kernel launch stats");
  // CUDA.jl's graphs page times 80 broadcast kernels at 260 us launched one by one (3.25 us
  // each) and a graph of them at 3.5 us of CPU time.
  core::Nanos host_launch = 0;
  core::Nanos graph_launch = 0;

  // GEMMs timed as a library tiles them. Off: a GEMM is its builder's grid at
  // achievable_compute_fraction, like any kernel. On: a kernel carrying its GEMM problem
  // (workload::Kernel::gemm) is timed as the fastest of a set of output tiles (256x128 down to
  // 64x64) and split-K factors on the SMs it holds, as cuBLAS's heuristics pick one per call;
  // a tile's mainloop reaches gemm_compute_fraction x its pipe's peak, scaled down for smaller
  // tiles by their arithmetic intensity I = tm tn / (tm + tn) as I / (I + gemm_tile_knee)
  // (normalised to 1 for the 256x128 tile): small tiles reload more operand bytes per FLOP.
  bool gemm_tile_selection = false;
  // With gemm_tile_selection: the library also has Stream-K kernels (Osama et al., "Stream-K",
  // PPoPP 2023; CUTLASS's and cuBLAS's Hopper kernels), which split the tiles' K iterations
  // evenly over the SMs, so a GEMM whose tiles fill 1.2 waves no longer pays for two.
  // Libraries without them show a staircase in time against M at every wave; profiles show
  // both (docs/validate.md).
  bool gemm_stream_k = false;
  double gemm_compute_fraction = 0.7;
  double gemm_tile_knee = 32;
  // Latency of a GEMM kernel beyond the launch overhead (pipeline fill, epilogue), not
  // overlapped with its memory traffic.
  core::Nanos gemm_fixed = 0;
  // The same three for a library with Stream-K kernels, used for all its GEMM kernels (whole
  // waves, split-K and Stream-K) while gemm_stream_k is on: a newer cuBLAS is faster per tile and
  // has a shorter fixed cost than the one without (docs/validate.md, "Two GEMM libraries").
  double stream_k_compute_fraction = 0.7;
  double stream_k_tile_knee = 32;
  core::Nanos stream_k_fixed = 0;
  // Fraction of the tensor peak attention kernels (FlashAttention) reach; 0: the
  // achievable_compute_fraction of every kernel.
  double attention_compute_fraction = 0;
  // Fraction of peak DRAM bandwidth attention kernels reach while they stream the KV cache:
  // decode attention reads long contiguous pages with nothing to write back but one row per
  // head, and measures closer to the peak than GEMMs, whose achievable fraction is the
  // default (docs/validate.md, "Attention"). 0: achievable_bandwidth_fraction.
  double attention_bandwidth_fraction = 0;

  // Collectives between GPUs: a latency per sequential step over the link
  // (workload::Kernel::link_steps; NCCL's handshake and its protocol's flush per ring step) on
  // top of the launch overhead, and the fraction of the link rate the builder states (NVLink's
  // per-direction figure, or the host link's) that their transfers reach.
  core::Nanos collective_latency = 0;
  double link_bandwidth_fraction = 1;

  // ASSUMPTION: what a block-range launch (a LithOS atom, GpuDevice::submit_range) costs on top
  // of launch_overhead. The launch keeps the kernel's whole grid; a prelude makes the blocks
  // outside the range exit at once, and the interposer writes the range before each launch.
  // Neither LithOS nor its reviewers give a figure; 1 us is a guess (a third of the assumed
  // launch cost) to be measured as the time of an atom of a few blocks against the same blocks
  // launched as their own grid.
  core::Nanos atom_launch_overhead = core::micros(1);

  // ASSUMPTION: time a kernel that stops at a checkpoint (GpuDevice::request_yield) keeps its SMs
  // after reaching it: its blocks see the flag, save their tile counter to global memory and
  // exit. CoGPU gives no figure; 1 us (a few DRAM round trips and a grid drain) is a guess, to be
  // measured as the time from raising the flag to the kernel's end minus the time to its next
  // checkpoint.
  core::Nanos yield_save_cost = core::micros(1);

  // ASSUMPTION: share of the dynamic power (TDP minus idle) that follows compute activity and the
  // clock (the rest follows memory traffic). Dynamic power ~ C V^2 f with V roughly proportional
  // to f gives the (f / f_boost)^3 factor applied to the compute part.
  double compute_power_weight = 0.7;

  // Blocks of different kernels share an SM while its thread, register, shared-memory and
  // block-slot budgets allow, as the hardware block scheduler places them for streams of one
  // context and for MPS clients (CUDA C++ Programming Guide, "Concurrent Kernel Execution"; NVIDIA
  // MPS documentation, "Concurrency"); a kernel gives back the SMs its partial last wave leaves
  // idle; co-resident kernels on one pipe share it. ASSUMPTIONS: free SMs are filled before
  // shared ones; a pipe is shared max-min fairly by compute demand (the warp schedulers issue
  // from every resident warp that is ready); tensor and FP32 pipes do not contend (issue slots
  // are not modelled). Off: the first-order model, one kernel per SM until it ends.
  bool co_residency = true;

  // Exact speed-up: while a stream has its SM set and bandwidth domain to itself, the kernels of
  // its current submission are timed in one go with one completion event, and split back into
  // per-kernel progress the moment anything else could change their rate. Off: every kernel gets
  // its own completion event (the reference path the fast path is tested against).
  bool batch_isolated_kernels = true;
  // Longest run of kernels timed in one go. A stream's first batch, and its first after a
  // split, time 8; each batch that runs to its end doubles the next, up to this.
  int max_batch_kernels = 1024;
};

// Checks the options and the parts of the spec the model reads; the error says what to fix.
core::Status validate_model(const hw::GpuSpec& spec, const SimGpuOptions& options);

// The options a GPU is simulated with unless a scenario overrides them: the calibration fitted
// for its board (sim_gpu_calibration.cpp), or the generic assumptions above for a board without
// one. A MIG slice ("H100-SXM5-80GB 3g.40gb") takes its board's.
SimGpuOptions default_options(const hw::GpuSpec& spec);

// What a scenario's `sim:` section sets, applied over each simulated GPU's default_options when
// that GPU is made: the same scenario on another --gpu keeps that GPU's calibration and changes
// only what the section names.
struct SimGpuOverrides {
  std::optional<double> achievable_compute_fraction;
  std::optional<double> achievable_bandwidth_fraction;
  std::optional<double> elementwise_bandwidth_fraction;
  std::optional<double> pointwise_bandwidth_fraction;
  std::optional<double> gather_bandwidth_fraction;
  std::optional<double> norm_bandwidth_fraction;
  std::optional<double> sm_bandwidth_multiple;
  std::optional<core::Nanos> launch_overhead;
  std::optional<core::Nanos> host_launch;
  std::optional<core::Nanos> graph_launch;
  std::optional<core::Nanos> atom_launch_overhead;
  std::optional<core::Nanos> yield_save_cost;
  std::optional<double> compute_power_weight;
  std::optional<bool> gemm_tile_selection;
  std::optional<bool> gemm_stream_k;
  std::optional<double> gemm_compute_fraction;
  std::optional<double> gemm_tile_knee;
  std::optional<core::Nanos> gemm_fixed;
  std::optional<double> stream_k_compute_fraction;
  std::optional<double> stream_k_tile_knee;
  std::optional<core::Nanos> stream_k_fixed;
  std::optional<double> attention_compute_fraction;
  std::optional<double> attention_bandwidth_fraction;
  std::optional<core::Nanos> collective_latency;
  std::optional<double> link_bandwidth_fraction;
  std::optional<bool> co_residency;
  std::optional<bool> batch_isolated_kernels;
};

// `base` with `overrides` applied.
SimGpuOptions apply(SimGpuOptions base, const SimGpuOverrides& overrides);
// default_options(spec) with `overrides` applied.
SimGpuOptions options_for(const hw::GpuSpec& spec, const SimGpuOverrides& overrides);

}  // namespace tessera::sim
