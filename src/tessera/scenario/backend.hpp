#pragma once
// Where a scenario's modes run: the simulated GPU in virtual time (the default, and the only
// backend that gives byte-identical reports), or real NVIDIA GPUs through the CUDA driver in
// wall-clock time (cuda::CudaGpu). The runner, the sharing modes and the tenants are the same
// code on both: they see only device::GpuDevice and device::Executor.

#include <memory>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/device/executor.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/scenario/scenario.hpp"

namespace tessera::cuda {
class DriverLibrary;
}

namespace tessera::scenario {

// One mode's run: its clock, its GPUs and the loop that drives them. A fresh backend per mode.
class RunBackend {
 public:
  virtual ~RunBackend() = default;
  // The report's backend: "simulator" or "cuda".
  virtual std::string_view name() const = 0;
  virtual device::Executor& executor() = 0;
  // GPU number `index` of this run (exclusive mode asks for one per tenant). The backend must
  // outlive the GPUs it makes.
  virtual core::Result<std::unique_ptr<device::GpuDevice>> make_gpu(const Scenario& scenario,
                                                                    int index) = 0;
  // Runs timers and devices until executor time `until`.
  virtual core::Status run_until(core::Nanos until) = 0;
};

std::unique_ptr<RunBackend> make_sim_backend();

// Real GPUs through `driver` (which must outlive the backend). Fails where this build has no CUDA
// backend (cuda::built_with_cuda()).
core::Result<std::unique_ptr<RunBackend>> make_cuda_backend(const cuda::DriverLibrary& driver);

}  // namespace tessera::scenario
