#include "tessera/device/pipe_peak.hpp"

namespace tessera::device {

double peak_flops(const hw::GpuSpec& spec, workload::ComputePipe pipe) {
  switch (pipe) {
    case workload::ComputePipe::kTensorFp16: return spec.peak_fp16_tensor_flops;
    case workload::ComputePipe::kFp32: return spec.peak_fp32_flops;
    case workload::ComputePipe::kTensorFp8: return spec.peak_fp8_tensor_flops;
    case workload::ComputePipe::kTensorTf32: return spec.peak_tf32_tensor_flops;
  }
  return 0;
}

}  // namespace tessera::device
