#include "tessera/backends/cuda/backend_status.hpp"

#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda/driver_library.hpp"
#endif

namespace tessera::cuda {

bool built_with_cuda() {
#ifdef TESSERA_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

DriverProbe probe_driver([[maybe_unused]] const std::string& path) {
  DriverProbe probe;
#ifdef TESSERA_HAVE_CUDA
  auto driver = DriverLibrary::open(path);
  if (!driver) {
    probe.reason = driver.error().message();
    return probe;
  }
  probe.driver_version = (*driver)->driver_version();
  auto count = (*driver)->device_count();
  if (!count) {
    probe.reason = count.error().message();
    return probe;
  }
  probe.devices = *count;
  if (probe.devices == 0) {
    probe.reason = fmt::format("the NVIDIA driver {} reports no GPU", (*driver)->path());
    return probe;
  }
  probe.available = true;
#else
  probe.reason = "this tessera was built without the CUDA toolkit (nvcc not found at build time)";
#endif
  return probe;
}

}  // namespace tessera::cuda
