#pragma once
// NVIDIA's management library (libnvidia-ml), loaded at run time and initialised for the life of
// this object: open() loads it, resolves every entry point tessera uses and calls nvmlInit_v2;
// the destructor calls nvmlShutdown. NVML return codes become core::Error values in
// core::Domain::kNvml that name the call and carry nvmlErrorString's text.

#include <memory>
#include <string>
#include <string_view>

#include "tessera/backends/nvml/nvml_api.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/shared_library.hpp"

namespace tessera::cuda {

// The resolved entry points. Every one is required except those marked optional (null when the
// driver's library lacks them).
struct NvmlApi {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nvml::DeviceGetNameFn device_get_name = nullptr;
  nvml::DeviceGetUuidFn device_get_uuid = nullptr;
  nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  nvml::DeviceGetTotalEnergyConsumptionFn device_get_total_energy_consumption = nullptr;  // opt.
  nvml::DeviceGetMigModeFn device_get_mig_mode = nullptr;
  nvml::DeviceGetGpuInstanceProfileInfoFn device_get_gpu_instance_profile_info = nullptr;
  nvml::DeviceCreateGpuInstanceWithPlacementFn device_create_gpu_instance_with_placement = nullptr;
  nvml::GpuInstanceDestroyFn gpu_instance_destroy = nullptr;
  nvml::DeviceGetGpuInstancesFn device_get_gpu_instances = nullptr;
  nvml::GpuInstanceGetInfoFn gpu_instance_get_info = nullptr;
  nvml::GpuInstanceGetComputeInstanceProfileInfoFn gpu_instance_get_compute_instance_profile_info =
      nullptr;
  nvml::GpuInstanceCreateComputeInstanceFn gpu_instance_create_compute_instance = nullptr;
  nvml::GpuInstanceGetComputeInstancesFn gpu_instance_get_compute_instances = nullptr;
  nvml::ComputeInstanceDestroyFn compute_instance_destroy = nullptr;
  nvml::DeviceGetMaxMigDeviceCountFn device_get_max_mig_device_count = nullptr;
  nvml::DeviceGetMigDeviceHandleByIndexFn device_get_mig_device_handle_by_index = nullptr;
  nvml::DeviceGetGpuInstanceIdFn device_get_gpu_instance_id = nullptr;
  // Clocks, power and utilisation, all optional (NvmlGpuControl reports what is missing).
  nvml::DeviceSetGpuLockedClocksFn device_set_gpu_locked_clocks = nullptr;
  nvml::DeviceResetGpuLockedClocksFn device_reset_gpu_locked_clocks = nullptr;
  nvml::DeviceGetSupportedMemoryClocksFn device_get_supported_memory_clocks = nullptr;
  nvml::DeviceGetSupportedGraphicsClocksFn device_get_supported_graphics_clocks = nullptr;
  nvml::DeviceGetClockFn device_get_clock = nullptr;
  nvml::DeviceGetPowerUsageFn device_get_power_usage = nullptr;
  nvml::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
};

class NvmlLibrary {
 public:
  // The library file tessera loads: $TESSERA_NVML_LIBRARY if set, else "libnvidia-ml.so.1" (the
  // name the NVIDIA driver installs; found on the loader's search path).
  static std::string default_path();
  // Loads `path` (empty: default_path()), resolves the entry points and initialises NVML.
  static core::Result<std::unique_ptr<NvmlLibrary>> open(const std::string& path = {});
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return library_->path(); }

  // nvmlErrorString's text for `r`.
  std::string error_string(nvml::Return r) const;
  // Ok for NVML_SUCCESS; otherwise "<call>: <error string> (NVML error N)" with a code that
  // follows the return value (permission and in-use: kFailedPrecondition, insufficient
  // resources: kResourceExhausted, not supported: kUnsupported, not found: kNotFound, invalid
  // argument: kInvalidArgument, anything else: kInternal).
  core::Status check(nvml::Return r, std::string_view call) const;

 private:
  NvmlLibrary(std::unique_ptr<SharedLibrary> library, NvmlApi api)
      : library_(std::move(library)), api_(api) {}
  std::unique_ptr<SharedLibrary> library_;
  NvmlApi api_;
};

// The error code that `r` maps to (see NvmlLibrary::check).
core::Code nvml_error_code(nvml::Return r);

}  // namespace tessera::cuda
