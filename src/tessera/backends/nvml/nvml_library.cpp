#include "tessera/backends/nvml/nvml_library.hpp"

#include <cstdlib>
#include <type_traits>

#include "tessera/core/try.hpp"

namespace tessera::cuda {

std::string NvmlLibrary::default_path() {
  const char* env = std::getenv("TESSERA_NVML_LIBRARY");
  if (env != nullptr && *env != '\0') return env;
  return "libnvidia-ml.so.1";
}

core::Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open(const std::string& path) {
  const std::string file = path.empty() ? default_path() : path;
  auto loaded = SharedLibrary::open(file, core::Domain::kNvml);
  if (!loaded) {
    return std::unexpected(loaded.error().with_context(
        "NVML is not available (the NVIDIA driver installs libnvidia-ml.so.1; set "
        "TESSERA_NVML_LIBRARY to use another file)"));
  }
  std::unique_ptr<SharedLibrary> lib = std::move(*loaded);

  NvmlApi api;
  TESSERA_TRY(lib->resolve("nvmlInit_v2", api.init));
  TESSERA_TRY(lib->resolve("nvmlShutdown", api.shutdown));
  TESSERA_TRY(lib->resolve("nvmlErrorString", api.error_string));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetHandleByIndex_v2", api.device_get_handle_by_index));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetName", api.device_get_name));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetUUID", api.device_get_uuid));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetMemoryInfo", api.device_get_memory_info));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetMigMode", api.device_get_mig_mode));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetGpuInstanceProfileInfo",
                           api.device_get_gpu_instance_profile_info));
  TESSERA_TRY(lib->resolve("nvmlDeviceCreateGpuInstanceWithPlacement",
                           api.device_create_gpu_instance_with_placement));
  TESSERA_TRY(lib->resolve("nvmlGpuInstanceDestroy", api.gpu_instance_destroy));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetGpuInstances", api.device_get_gpu_instances));
  TESSERA_TRY(lib->resolve("nvmlGpuInstanceGetInfo", api.gpu_instance_get_info));
  TESSERA_TRY(lib->resolve("nvmlGpuInstanceGetComputeInstanceProfileInfo",
                           api.gpu_instance_get_compute_instance_profile_info));
  TESSERA_TRY(lib->resolve("nvmlGpuInstanceCreateComputeInstance",
                           api.gpu_instance_create_compute_instance));
  TESSERA_TRY(
      lib->resolve("nvmlGpuInstanceGetComputeInstances", api.gpu_instance_get_compute_instances));
  TESSERA_TRY(lib->resolve("nvmlComputeInstanceDestroy", api.compute_instance_destroy));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetMaxMigDeviceCount", api.device_get_max_mig_device_count));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetMigDeviceHandleByIndex",
                           api.device_get_mig_device_handle_by_index));
  TESSERA_TRY(lib->resolve("nvmlDeviceGetGpuInstanceId", api.device_get_gpu_instance_id));
  // Optional: energy, clocks, power and utilisation are reported only where the driver has them.
  const auto optional = [&lib](const char* name, auto& fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lib->find(name));
  };
  optional("nvmlDeviceGetTotalEnergyConsumption", api.device_get_total_energy_consumption);
  optional("nvmlDeviceSetGpuLockedClocks", api.device_set_gpu_locked_clocks);
  optional("nvmlDeviceResetGpuLockedClocks", api.device_reset_gpu_locked_clocks);
  optional("nvmlDeviceGetSupportedMemoryClocks", api.device_get_supported_memory_clocks);
  optional("nvmlDeviceGetSupportedGraphicsClocks", api.device_get_supported_graphics_clocks);
  optional("nvmlDeviceGetClock", api.device_get_clock);
  optional("nvmlDeviceGetPowerUsage", api.device_get_power_usage);
  optional("nvmlDeviceGetUtilizationRates", api.device_get_utilization_rates);

  std::unique_ptr<NvmlLibrary> nvml(new NvmlLibrary(std::move(lib), api));
  const nvml::Return r = api.init();
  if (r != nvml::kSuccess) {
    // Not initialised: the destructor must not shut down what never started.
    auto error = nvml->check(r, "nvmlInit_v2");
    nvml->api_.shutdown = nullptr;
    return std::unexpected(error.error().with_context(
        "cannot initialise NVML (is the NVIDIA driver loaded? does nvidia-smi work?)"));
  }
  return nvml;
}

NvmlLibrary::~NvmlLibrary() {
  if (api_.shutdown != nullptr) api_.shutdown();
}

std::string NvmlLibrary::error_string(nvml::Return r) const {
  const char* text = api_.error_string != nullptr ? api_.error_string(r) : nullptr;
  return text != nullptr ? text : "unknown NVML error";
}

core::Code nvml_error_code(nvml::Return r) {
  switch (r) {
    case nvml::kErrorNoPermission:
    case nvml::kErrorInUse:
    case nvml::kErrorResetRequired: return core::Code::kFailedPrecondition;
    case nvml::kErrorInsufficientResources: return core::Code::kResourceExhausted;
    case nvml::kErrorNotSupported:
    case nvml::kErrorFunctionNotFound: return core::Code::kUnsupported;
    case nvml::kErrorNotFound: return core::Code::kNotFound;
    case nvml::kErrorInvalidArgument: return core::Code::kInvalidArgument;
    default: return core::Code::kInternal;
  }
}

core::Status NvmlLibrary::check(nvml::Return r, std::string_view call) const {
  if (r == nvml::kSuccess) return {};
  std::string hint;
  if (r == nvml::kErrorNoPermission) {
    hint =
        " (MIG management needs root, or the /dev/nvidia-caps capabilities the MIG user "
        "guide describes)";
  }
  return core::failf(core::Domain::kNvml, nvml_error_code(r), "{}: {} (NVML error {}){}", call,
                     error_string(r), r, hint);
}

}  // namespace tessera::cuda
