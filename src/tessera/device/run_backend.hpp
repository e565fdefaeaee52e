#pragma once
// Where a scenario's modes run: the simulated GPU in virtual time (backends/sim/gpu, the only
// backend that gives byte-identical reports), or real NVIDIA GPUs through the CUDA driver in
// wall-clock time (backends/cuda). The runner, the sharing modes and the tenants are the same
// code on both: they see only GpuDevice and Executor.

#include <memory>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/executor.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::device {

// One mode's run: its clock, its GPUs and the loop that drives them. A fresh backend per mode.
class RunBackend {
 public:
  virtual ~RunBackend() = default;
  // The report's backend: "simulator" or "cuda".
  virtual std::string_view name() const = 0;
  virtual Executor& executor() = 0;
  // GPU number `index` of this run (exclusive mode asks for one per tenant), planned as `spec`.
  // The backend must outlive the GPUs it makes.
  virtual core::Result<std::unique_ptr<GpuDevice>> make_gpu(const hw::GpuSpec& spec, int index) = 0;
  // Runs timers and devices until executor time `until`.
  virtual core::Status run_until(core::Nanos until) = 0;
};

}  // namespace tessera::device
