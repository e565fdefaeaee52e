#pragma once
// A GPU's peak dense throughput on each compute pipe, the one mapping every backend and check
// reads.

#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::device {

// FLOP/s of the whole device at the boost clock; 0 where the GPU lacks the pipe (FP8 before Ada).
double peak_flops(const hw::GpuSpec& spec, workload::ComputePipe pipe);

}  // namespace tessera::device
