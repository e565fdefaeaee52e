#pragma once
// Kernel atomization (LithOS §4.4): the next block range ("atom") of a kernel to launch on a given
// number of TPCs, sized to a target duration. Pure: no device, no clock.
//
// An atom is whole waves on its TPCs (a wave = TPCs x SMs per TPC x resident blocks per SM), so
// no SM idles in the middle of an atom for want of blocks; at least one wave; as many waves as the
// predicted per-wave time fits in the target; clipped to the blocks left. Atomization never
// changes which blocks run or how a block computes: atoms of one kernel cover its grid in order,
// each block exactly once, with the kernel's own launch configuration.

#include <cstdint>
#include <optional>

#include "tessera/core/time.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

// Why an atom has the size it has; schedulers count the reasons they report.
enum class AtomReason {
  kSplit,           // whole waves that fit the target, fewer than the blocks left
  kRestFits,        // the blocks left fit the target (or are one wave): they run as one piece
  kNotSplittable,   // the kernel is not block-independent: it runs whole, never split
  kUnknownLatency,  // no prediction yet: the rest runs whole, so the run profiles the kernel
  kOwnTpcs,         // set by the TPC scheduler: on the tenant's own TPCs the rest runs as one piece
};

struct AtomRequest {
  const workload::Kernel* kernel = nullptr;
  std::int64_t next_block = 0;  // blocks already handed out as earlier atoms
  int tpcs = 0;                 // TPCs the atom will run on
  // Predicted latency of the whole grid (kernel->blocks) on `tpcs` TPCs; nullopt if unknown.
  std::optional<core::Nanos> whole_latency;
  core::Nanos target = 0;  // atom duration to aim for
};

struct Atom {
  device::BlockRange range;
  AtomReason reason = AtomReason::kRestFits;
  // Predicted duration of the range: the whole-grid latency shared evenly over its waves (a
  // first-order assumption: waves of one kernel take equal time). nullopt if unknown.
  std::optional<core::Nanos> predicted;
};

// Blocks in one wave of `kernel` on `tpcs` TPCs; at least 1 (a kernel that fits no SM is left for
// the device's launch check to reject).
std::int64_t wave_blocks(const hw::GpuSpec& spec, const workload::Kernel& kernel, int tpcs);

// The next atom of request.kernel from request.next_block. The request must have blocks left
// (next_block < kernel->blocks) and tpcs >= 1.
Atom next_atom(const hw::GpuSpec& spec, const AtomRequest& request);

}  // namespace tessera::gpu
