#pragma once
// Real NVIDIA GPUs as a device::RunBackend: a wall-clock executor and a CudaGpu per GPU asked
// for (GPU number i is device ordinal i), driven together on the caller's thread.

#include <memory>

#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/device/run_backend.hpp"

namespace tessera::cuda {

// `driver` must outlive the backend.
std::unique_ptr<device::RunBackend> make_cuda_run_backend(const DriverLibrary& driver);

}  // namespace tessera::cuda
