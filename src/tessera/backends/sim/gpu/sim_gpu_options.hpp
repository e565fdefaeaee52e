#pragma once
// The simulated GPU's model assumptions. None of these is a datasheet fact: each default is a
// first-order guess, labelled ASSUMPTION, to be checked against a real GPU when one is available
// (the same kernels timed for real). Scenarios override them in their `sim:` section.

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

  // ASSUMPTION: one SM can draw at most this multiple of its even share of the (achievable)
  // device bandwidth, so about half the SMs can saturate DRAM at the default of 2.0. Per-SM load
  // bandwidth is bounded by its L1/LSU path and outstanding misses; the multiple is a guess to be
  // measured on a GPU (a streaming kernel on 1..N SMs).
  double sm_bandwidth_multiple = 2.0;

  // ASSUMPTION: time a kernel spends on launch and grid drain, added to every kernel (a few
  // microseconds is the commonly quoted launch latency on the CUDA driver).
  core::Nanos launch_overhead = core::micros(3);

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

}  // namespace tessera::sim
