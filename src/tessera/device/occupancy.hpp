#pragma once
// How many blocks of a kernel fit on one SM, and the checks a launch must pass first.
//
// First-order occupancy: blocks per SM = min(max resident blocks, max resident threads / threads,
// registers / (registers per thread x threads), shared memory / shared memory per block). The
// hardware's allocation granularities (threads in warps of 32, registers in per-warp chunks,
// shared memory in 128-byte lines plus 1 KiB reserved per block) are not modelled; they lower
// occupancy by at most one step for unaligned footprints.

#include "tessera/core/error.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::device {

// Blocks of `block` resident on one SM at once; 0 if even one does not fit.
int blocks_per_sm(const hw::SmLimits& sm, const workload::BlockResources& block);

// Checks one kernel against the GPU's limits. The error names the kernel, the limit it breaks and
// what to change.
core::Status validate_kernel(const hw::GpuSpec& spec, const workload::Kernel& kernel);

// Checks every distinct kernel of a sequence (each group's kernels once, not once per repeat),
// and the sequence's shape: at least one kernel, every repeat count at least 1. A kernel's error
// is prefixed with its position ("group 1, kernel 2: kernel 'qkv' ...").
core::Status validate_sequence(const hw::GpuSpec& spec, const workload::KernelSequence& sequence);

// Checks a block-range submission (GpuDevice::submit_range) the same way on every backend: a
// non-null sequence of exactly one kernel (one group, repeat 1) that is block-independent, and a
// non-empty range inside its grid. Returns that kernel. Errors name `stream` and what to change.
core::Result<const workload::Kernel*> validate_range_submission(
    std::uint32_t stream, const workload::KernelSequencePtr& sequence, std::int64_t begin,
    std::int64_t end);

}  // namespace tessera::device
