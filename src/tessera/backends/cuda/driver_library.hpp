#pragma once
// The CUDA driver (libcuda.so.1), loaded at run time. Nothing links against it: open() dlopens the
// library, takes cuGetProcAddress_v2 with dlsym and resolves every other entry point through it
// (as the CUDA runtime does), asking for the ABI of the cuda.h tessera was compiled against
// (CUDA_VERSION), then calls cuInit(0). Driver return codes become core::Error values in
// core::Domain::kCuda that name the call and carry cuGetErrorName / cuGetErrorString's text.
//
// Types and signatures come from the toolkit's cuda.h (headers only; this file is built only
// where the toolkit is, see cmake/TesseraCuda.cmake). Entry points a driver may lack are optional
// and null when missing (green contexts need driver 12.4+, their streams 12.5+); the rest are
// required, and open() fails naming the first one missing.

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/core/shared_library.hpp"

namespace tessera::cuda {

// decltype(&::cuX) gives each field the exact type of the versioned symbol cuda.h maps cuX to
// (cuMemAlloc is cuMemAlloc_v2); cuGetProcAddress resolves the base name to the same version.
struct DriverApi {
  // Initialisation and errors.
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  // Devices.
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDeviceTotalMem) device_total_mem = nullptr;
  decltype(&::cuDeviceGetUuid) device_get_uuid = nullptr;  // matches NVML's "GPU-<uuid>"
  // Contexts: tessera uses the primary context (and green contexts carved from it).
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuCtxPushCurrent) ctx_push_current = nullptr;
  decltype(&::cuCtxPopCurrent) ctx_pop_current = nullptr;
  decltype(&::cuCtxGetDevice) ctx_get_device = nullptr;
  // Green contexts (optional: CUDA 12.4+ drivers; stream creation 12.5+).
  decltype(&::cuDeviceGetDevResource) device_get_dev_resource = nullptr;
  decltype(&::cuDevSmResourceSplitByCount) dev_sm_resource_split_by_count = nullptr;
  decltype(&::cuDevResourceGenerateDesc) dev_resource_generate_desc = nullptr;
  decltype(&::cuGreenCtxCreate) green_ctx_create = nullptr;
  decltype(&::cuGreenCtxDestroy) green_ctx_destroy = nullptr;
  decltype(&::cuCtxFromGreenCtx) ctx_from_green_ctx = nullptr;
  decltype(&::cuGreenCtxGetDevResource) green_ctx_get_dev_resource = nullptr;
  decltype(&::cuGreenCtxStreamCreate) green_ctx_stream_create = nullptr;
  // Streams and events.
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamCreateWithPriority) stream_create_with_priority = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;
  decltype(&::cuStreamWaitEvent) stream_wait_event = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventQuery) event_query = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
  // Memory: device buffers, and mapped pinned host memory for the control kernel's flags.
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemGetInfo) mem_get_info = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpy_htod_async = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpy_dtoh_async = nullptr;
  decltype(&::cuMemsetD8) memset_d8 = nullptr;
  decltype(&::cuMemHostAlloc) mem_host_alloc = nullptr;
  decltype(&::cuMemFreeHost) mem_free_host = nullptr;
  decltype(&::cuMemHostGetDevicePointer) mem_host_get_device_pointer = nullptr;
  // Tessera's own kernels, embedded as a fatbin and loaded as a context-independent library, so
  // that one load serves the primary context and every green context (kernel_module.hpp).
  decltype(&::cuLibraryLoadData) library_load_data = nullptr;
  decltype(&::cuLibraryUnload) library_unload = nullptr;
  decltype(&::cuLibraryGetKernel) library_get_kernel = nullptr;
  decltype(&::cuKernelGetAttribute) kernel_get_attribute = nullptr;
  decltype(&::cuKernelSetAttribute) kernel_set_attribute = nullptr;
  // Launches (a CUkernel is passed as the CUfunction, as cuda.h allows).
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) occupancy_max_active_blocks = nullptr;

  bool has_green_contexts() const {
    return device_get_dev_resource != nullptr && dev_sm_resource_split_by_count != nullptr &&
           dev_resource_generate_desc != nullptr && green_ctx_create != nullptr &&
           green_ctx_destroy != nullptr && ctx_from_green_ctx != nullptr &&
           green_ctx_get_dev_resource != nullptr && green_ctx_stream_create != nullptr;
  }
};

// One GPU as the driver describes it.
struct DriverDevice {
  int ordinal = 0;
  CUdevice handle = 0;
  std::string name;
  int sms = 0;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  std::int64_t memory_bytes = 0;
  int sm_clock_khz = 0;  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE
  std::string uuid;      // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML prints it
  bool unified_addressing = false;
  bool can_map_host_memory = false;
};

class DriverLibrary {
 public:
  // The library file tessera loads: $TESSERA_CUDA_LIBRARY if set, else "libcuda.so.1" (the name
  // the NVIDIA driver installs; found on the loader's search path).
  static std::string default_path();
  // Loads `path` (empty: default_path()), resolves the entry points and calls cuInit(0). The
  // error says what is missing and what to do ("no NVIDIA driver: ...; tessera uses the
  // simulated GPU" is the caller's line, not this one's).
  static core::Result<std::unique_ptr<DriverLibrary>> open(const std::string& path = {});
  ~DriverLibrary();
  DriverLibrary(const DriverLibrary&) = delete;
  DriverLibrary& operator=(const DriverLibrary&) = delete;

  const DriverApi& api() const { return api_; }
  const std::string& path() const;
  int driver_version() const { return driver_version_; }  // cuDriverGetVersion: 13000 = 13.0

  // Ok for CUDA_SUCCESS; otherwise "<call>: <name>: <string> (CUDA error N)" in Domain::kCuda
  // with driver_error_code(r).
  core::Status check(CUresult r, std::string_view call) const;

  core::Result<int> device_count() const;
  core::Result<DriverDevice> device(int ordinal) const;

 private:
  DriverLibrary(std::unique_ptr<SharedLibrary> library, DriverApi api, int version);
  std::unique_ptr<SharedLibrary> library_;
  DriverApi api_;
  int driver_version_ = 0;
};

// The error code `r` maps to: out of memory / resources: kResourceExhausted; invalid value,
// handle or configuration: kInvalidArgument; not supported / not permitted / no device / stub
// library: kUnsupported; not found: kNotFound; not initialised, not ready, context in use:
// kFailedPrecondition; anything else: kInternal.
core::Code driver_error_code(CUresult r);

}  // namespace tessera::cuda
