#include "tessera/backends/cuda/driver_library.hpp"

#include <cstdlib>
#include <vector>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {
namespace {

using PfnGetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                       CUdriverProcAddressQueryResult*);

// The name the NVIDIA driver installs its library under.
constexpr const char* kDriverName = "libcuda.so.1";

// The control kernel stays resident on a stream of its own: with the driver's default number of
// hardware work queues (8) streams share queues and a kernel queued behind it on a shared one
// would wait for it (false serialisation; notes section 6, cuda.h:24717-24727 on shared
// connections). ASSUMPTION: 32 is the largest value the variable takes (CUDA C++ Programming
// Guide, environment variables: "1 to 32"); more queues cost nothing tessera measures.
constexpr const char* kMaxConnections = "32";

// One DriverApi field: the base name cuGetProcAddress takes, where to store it, and the CUDA
// version whose ABI the field's type has.
struct Entry {
  const char* name;
  void** slot;
  int version;
  bool optional;
};

template <typename Fn>
void** slot(Fn& fn) {
  return reinterpret_cast<void**>(&fn);
}

std::vector<Entry> entries(DriverApi& a) {
  // cuCtxSynchronize and cuCtxGetDevice changed ABI in CUDA 13.0 (cudaTypedefs.h:
  // PFN_cuCtxSynchronize_v13000 takes a context, PFN_cuCtxGetDevice_v13000 one more argument),
  // but cuda.h still declares the old forms, which the fields have: ask for those (v2000).
  constexpr int kOldAbi = 2000;
  constexpr int v = CUDA_VERSION;
  return {
      {"cuGetErrorName", slot(a.get_error_name), v, false},
      {"cuGetErrorString", slot(a.get_error_string), v, false},
      {"cuInit", slot(a.init), v, false},
      {"cuDriverGetVersion", slot(a.driver_get_version), v, false},
      {"cuDeviceGetCount", slot(a.device_get_count), v, false},
      {"cuDeviceGet", slot(a.device_get), v, false},
      {"cuDeviceGetName", slot(a.device_get_name), v, false},
      {"cuDeviceGetAttribute", slot(a.device_get_attribute), v, false},
      {"cuDeviceTotalMem", slot(a.device_total_mem), v, false},
      {"cuDeviceGetUuid", slot(a.device_get_uuid), v, false},
      {"cuDevicePrimaryCtxRetain", slot(a.primary_ctx_retain), v, false},
      {"cuDevicePrimaryCtxRelease", slot(a.primary_ctx_release), v, false},
      {"cuCtxSetCurrent", slot(a.ctx_set_current), v, false},
      {"cuCtxGetCurrent", slot(a.ctx_get_current), v, false},
      {"cuCtxSynchronize", slot(a.ctx_synchronize), kOldAbi, false},
      {"cuCtxPushCurrent", slot(a.ctx_push_current), v, false},
      {"cuCtxPopCurrent", slot(a.ctx_pop_current), v, false},
      {"cuCtxGetDevice", slot(a.ctx_get_device), kOldAbi, false},
      {"cuDeviceGetDevResource", slot(a.device_get_dev_resource), v, true},
      {"cuDevSmResourceSplitByCount", slot(a.dev_sm_resource_split_by_count), v, true},
      {"cuDevResourceGenerateDesc", slot(a.dev_resource_generate_desc), v, true},
      {"cuGreenCtxCreate", slot(a.green_ctx_create), v, true},
      {"cuGreenCtxDestroy", slot(a.green_ctx_destroy), v, true},
      {"cuCtxFromGreenCtx", slot(a.ctx_from_green_ctx), v, true},
      {"cuGreenCtxGetDevResource", slot(a.green_ctx_get_dev_resource), v, true},
      {"cuGreenCtxStreamCreate", slot(a.green_ctx_stream_create), v, true},
      {"cuStreamCreate", slot(a.stream_create), v, false},
      {"cuStreamCreateWithPriority", slot(a.stream_create_with_priority), v, false},
      {"cuStreamDestroy", slot(a.stream_destroy), v, false},
      {"cuStreamSynchronize", slot(a.stream_synchronize), v, false},
      {"cuStreamQuery", slot(a.stream_query), v, false},
      {"cuStreamWaitEvent", slot(a.stream_wait_event), v, false},
      {"cuEventCreate", slot(a.event_create), v, false},
      {"cuEventDestroy", slot(a.event_destroy), v, false},
      {"cuEventRecord", slot(a.event_record), v, false},
      {"cuEventQuery", slot(a.event_query), v, false},
      {"cuEventSynchronize", slot(a.event_synchronize), v, false},
      {"cuEventElapsedTime", slot(a.event_elapsed_time), v, false},
      {"cuMemAlloc", slot(a.mem_alloc), v, false},
      {"cuMemFree", slot(a.mem_free), v, false},
      {"cuMemGetInfo", slot(a.mem_get_info), v, false},
      {"cuMemcpyHtoD", slot(a.memcpy_htod), v, false},
      {"cuMemcpyDtoH", slot(a.memcpy_dtoh), v, false},
      {"cuMemcpyHtoDAsync", slot(a.memcpy_htod_async), v, false},
      {"cuMemcpyDtoHAsync", slot(a.memcpy_dtoh_async), v, false},
      {"cuMemsetD8", slot(a.memset_d8), v, false},
      {"cuMemHostAlloc", slot(a.mem_host_alloc), v, false},
      {"cuMemFreeHost", slot(a.mem_free_host), v, false},
      {"cuMemHostGetDevicePointer", slot(a.mem_host_get_device_pointer), v, false},
      {"cuLibraryLoadData", slot(a.library_load_data), v, false},
      {"cuLibraryUnload", slot(a.library_unload), v, false},
      {"cuLibraryGetKernel", slot(a.library_get_kernel), v, false},
      {"cuKernelGetAttribute", slot(a.kernel_get_attribute), v, false},
      {"cuKernelSetAttribute", slot(a.kernel_set_attribute), v, false},
      {"cuLaunchKernel", slot(a.launch_kernel), v, false},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor", slot(a.occupancy_max_active_blocks), v,
       false},
  };
}

core::Error stub_error(const std::string& path) {
  return core::Error(core::Domain::kCuda, core::Code::kUnsupported,
                     fmt::format("{} is the CUDA toolkit's stub libcuda (CUDA_ERROR_STUB_LIBRARY): "
                                 "it only satisfies the linker and has no driver behind it; "
                                 "install the NVIDIA driver or set TESSERA_CUDA_LIBRARY to its "
                                 "libcuda.so.1",
                                 path));
}

// Resolves every field through cuGetProcAddress_v2; optional ones stay null when missing.
core::Status resolve(PfnGetProcAddress gpa, const std::string& path, DriverApi& api) {
  for (const Entry& e : entries(api)) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult r = gpa(e.name, &fn, e.version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r == CUDA_ERROR_STUB_LIBRARY) return std::unexpected(stub_error(path));
    if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr) {
      *e.slot = fn;
      continue;
    }
    if (e.optional) {
      *e.slot = nullptr;
      continue;
    }
    if (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
      return core::failf(core::Domain::kCuda, core::Code::kUnsupported,
                         "the NVIDIA driver {} has {} but not in the version of CUDA {}.{} "
                         "tessera was built for (cuGetProcAddress: version not sufficient); "
                         "update the driver to one that supports CUDA {}.{}",
                         path, e.name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10,
                         CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    }
    return core::failf(core::Domain::kCuda, core::Code::kUnsupported,
                       "the NVIDIA driver {} does not have {} (cuGetProcAddress: symbol not "
                       "found, CUresult {}); update the driver",
                       path, e.name, static_cast<int>(r));
  }
  return {};
}

}  // namespace

std::string DriverLibrary::default_path() {
  const char* env = std::getenv("TESSERA_CUDA_LIBRARY");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDriverName);
}

core::Result<std::unique_ptr<DriverLibrary>> DriverLibrary::open(const std::string& path) {
  const std::string file = path.empty() ? default_path() : path;
  auto library = SharedLibrary::open(file, core::Domain::kCuda);
  if (!library) {
    // dlerror's text, without SharedLibrary's "cannot load <file>: " in front.
    std::string why = library.error().message();
    const std::string prefix = fmt::format("cannot load {}: ", file);
    if (why.starts_with(prefix)) why.erase(0, prefix.size());
    return core::failf(core::Domain::kCuda, core::Code::kNotFound,
                       "no NVIDIA driver found (dlopen {}: {}); set TESSERA_CUDA_LIBRARY to use "
                       "another file",
                       file, why);
  }
  // cuda.h maps cuGetProcAddress to cuGetProcAddress_v2 (line 159); ask for the symbol by its
  // exported name and call it through this pointer only.
  auto gpa = reinterpret_cast<PfnGetProcAddress>((*library)->find("cuGetProcAddress_v2"));
  if (gpa == nullptr) {
    return core::failf(core::Domain::kCuda, core::Code::kUnsupported,
                       "{} does not export cuGetProcAddress_v2: it is not an NVIDIA driver "
                       "library, or one older than CUDA 12.0; set TESSERA_CUDA_LIBRARY to the "
                       "driver's libcuda.so.1",
                       file);
  }
  DriverApi api;
  TESSERA_TRY(resolve(gpa, file, api));
  // Before cuInit: the driver reads it when it sets up its hardware queues.
  if (setenv("CUDA_DEVICE_MAX_CONNECTIONS", kMaxConnections, 0) != 0) {
    core::logger().warn(
        "cannot set CUDA_DEVICE_MAX_CONNECTIONS; streams may serialise behind the "
        "resident control kernel");
  }
  std::unique_ptr<DriverLibrary> driver(new DriverLibrary(std::move(*library), api, 0));
  const CUresult init = api.init(0);
  if (init == CUDA_ERROR_STUB_LIBRARY) return std::unexpected(stub_error(file));
  if (init != CUDA_SUCCESS) {
    auto status = driver->check(init, "cuInit");
    return std::unexpected(
        status.error().with_context(fmt::format("the NVIDIA driver {} did not initialise", file)));
  }
  int version = 0;
  TESSERA_TRY(driver->check(api.driver_get_version(&version), "cuDriverGetVersion"));
  driver->driver_version_ = version;
  return driver;
}

DriverLibrary::DriverLibrary(std::unique_ptr<SharedLibrary> library, DriverApi api, int version)
    : library_(std::move(library)), api_(api), driver_version_(version) {}

DriverLibrary::~DriverLibrary() = default;

const std::string& DriverLibrary::path() const {
  return library_->path();
}

core::Status DriverLibrary::check(CUresult r, std::string_view call) const {
  if (r == CUDA_SUCCESS) return {};
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.get_error_name == nullptr || api_.get_error_name(r, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    name = "unknown CUresult";
  }
  if (api_.get_error_string == nullptr || api_.get_error_string(r, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "no description from the driver";
  }
  return core::failf(core::Domain::kCuda, driver_error_code(r), "{}: {}: {} (CUDA error {})", call,
                     name, text, static_cast<int>(r));
}

core::Result<int> DriverLibrary::device_count() const {
  int n = 0;
  TESSERA_TRY(check(api_.device_get_count(&n), "cuDeviceGetCount"));
  return n;
}

core::Result<DriverDevice> DriverLibrary::device(int ordinal) const {
  DriverDevice d;
  d.ordinal = ordinal;
  TESSERA_TRY(check(api_.device_get(&d.handle, ordinal), "cuDeviceGet"));
  char name[256] = {};
  TESSERA_TRY(check(api_.device_get_name(name, sizeof name, d.handle), "cuDeviceGetName"));
  d.name = name;
  auto attribute = [&](CUdevice_attribute a, const char* what) -> core::Result<int> {
    int v = 0;
    TESSERA_TRY(check(api_.device_get_attribute(&v, a, d.handle),
                      fmt::format("cuDeviceGetAttribute({})", what)));
    return v;
  };
  TESSERA_ASSIGN_OR_RETURN(
      d.sms, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT"));
  TESSERA_ASSIGN_OR_RETURN(
      d.compute_capability_major,
      attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR"));
  TESSERA_ASSIGN_OR_RETURN(
      d.compute_capability_minor,
      attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR"));
  TESSERA_ASSIGN_OR_RETURN(d.sm_clock_khz, attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "CLOCK_RATE"));
  TESSERA_ASSIGN_OR_RETURN(const int unified,
                           attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "UNIFIED_ADDRESSING"));
  TESSERA_ASSIGN_OR_RETURN(const int map_host, attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
                                                         "CAN_MAP_HOST_MEMORY"));
  d.unified_addressing = unified != 0;
  d.can_map_host_memory = map_host != 0;
  std::size_t bytes = 0;
  TESSERA_TRY(check(api_.device_total_mem(&bytes, d.handle), "cuDeviceTotalMem"));
  d.memory_bytes = static_cast<std::int64_t>(bytes);
  CUuuid uuid = {};
  TESSERA_TRY(check(api_.device_get_uuid(&uuid, d.handle), "cuDeviceGetUuid"));
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  // NVML's form (nvmlDeviceGetUUID): GPU-8-4-4-4-12 hex digits of the same 16 bytes.
  d.uuid = fmt::format(
      "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
      b[15]);
  return d;
}

core::Code driver_error_code(CUresult r) {
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return core::Code::kResourceExhausted;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_RESOURCE_TYPE:
    case CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION: return core::Code::kInvalidArgument;
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY: return core::Code::kUnsupported;
    case CUDA_ERROR_NOT_FOUND: return core::Code::kNotFound;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NOT_READY:
    case CUDA_ERROR_CONTEXT_ALREADY_IN_USE: return core::Code::kFailedPrecondition;
    default: return core::Code::kInternal;
  }
}

}  // namespace tessera::cuda
