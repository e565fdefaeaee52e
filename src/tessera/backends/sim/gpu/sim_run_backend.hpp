#pragma once
// The simulated GPU as a device::RunBackend: one engine (virtual time) and a SimGpu per GPU
// asked for, all under the same model assumptions.

#include <memory>

#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/device/run_backend.hpp"

namespace tessera::sim {

std::unique_ptr<device::RunBackend> make_sim_run_backend(const SimGpuOverrides& overrides);

}  // namespace tessera::sim
