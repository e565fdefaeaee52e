#pragma once
// The checks of GpuDevice call arguments that every backend makes the same way, so that a policy
// gets the same error, word for word, from the simulated GPU and from a real one. What a backend
// checks on its own (SM caps, bandwidth domains, which it may not have) stays with it.

#include <cstddef>

#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/device/sm_mask.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::device {

// kNotFound unless `stream` is one of the `streams_created` ids create_stream handed out.
core::Status check_stream_id(StreamId stream, std::size_t streams_created);

// kInvalidArgument when `sms` names an SM the GPU `spec` does not have.
core::Status check_sm_mask(const hw::GpuSpec& spec, const SmMask& sms);

// kInvalidArgument for a null sequence passed to submit on `stream`.
core::Status check_submitted_sequence(StreamId stream, const workload::KernelSequencePtr& sequence);
// The sequence is not null, the span starts at one of its kernels and holds 1 to the number of
// kernels from there to the sequence's end.
core::Status check_span(StreamId stream, const workload::KernelSequencePtr& sequence,
                        const KernelSpan& span);

// validate_sequence (occupancy.hpp) of a sequence submitted on `stream`, the error prefixed with
// the stream.
core::Status validate_stream_sequence(const hw::GpuSpec& spec, StreamId stream,
                                      const workload::KernelSequence& sequence);

// kInvalidArgument unless `mhz` is within the GPU's clock range [min_clock_mhz, boost_clock_mhz]
// (a NaN is outside it).
core::Status check_clock_mhz(const hw::GpuSpec& spec, double mhz);

}  // namespace tessera::device
