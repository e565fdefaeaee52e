#pragma once
// Owners for the CUDA driver's handles. Each holds the driver it came from and releases the
// handle with the driver's own call (cuStreamDestroy, cuEventDestroy, cuGreenCtxDestroy,
// cuMemFree, cuMemFreeHost, cuLibraryUnload, cuDevicePrimaryCtxRelease) when it is destroyed or
// reset. A release that fails is logged, never returned: teardown carries on with the rest.
//
// The driver orders some releases, and owners do not know about each other, so ordering is up to
// whoever holds them. Members are destroyed in reverse order of declaration, so declare
// - a green context before its streams: cuGreenCtxDestroy does not destroy the streams made in
//   it, and a stream must not outlive its context;
// - a context (or the retained primary context) before the streams and events made in it;
// - a library before the streams that may still run its kernels.
// Memory a kernel may still use is freed only once the GPU is done with it: CudaGpu's teardown
// lets every stream drain first, then resets its owners explicitly, in the order it documents.

#include <cuda.h>

#include <string_view>
#include <utility>

#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/core/log.hpp"

namespace tessera::cuda {

// What one kind of handle is and how the driver releases it.
namespace driver_handle {
struct Stream {
  using Handle = CUstream;
  static constexpr auto release = &DriverApi::stream_destroy;
  static constexpr std::string_view call = "cuStreamDestroy";
};
struct Event {
  using Handle = CUevent;
  static constexpr auto release = &DriverApi::event_destroy;
  static constexpr std::string_view call = "cuEventDestroy";
};
struct GreenCtx {
  using Handle = CUgreenCtx;
  static constexpr auto release = &DriverApi::green_ctx_destroy;
  static constexpr std::string_view call = "cuGreenCtxDestroy";
};
struct DeviceMemory {
  using Handle = CUdeviceptr;
  static constexpr auto release = &DriverApi::mem_free;
  static constexpr std::string_view call = "cuMemFree";
};
struct HostMemory {
  using Handle = void*;
  static constexpr auto release = &DriverApi::mem_free_host;
  static constexpr std::string_view call = "cuMemFreeHost";
};
struct Library {
  using Handle = CUlibrary;
  static constexpr auto release = &DriverApi::library_unload;
  static constexpr std::string_view call = "cuLibraryUnload";
};
// A device whose primary context was retained (cuDevicePrimaryCtxRetain).
struct PrimaryContext {
  using Handle = CUdevice;
  static constexpr auto release = &DriverApi::primary_ctx_release;
  static constexpr std::string_view call = "cuDevicePrimaryCtxRelease";
};
}  // namespace driver_handle

// Owns one handle of `Kind` (a driver_handle:: struct); move-only. Empty when default-made, moved
// from, released or reset; an empty owner releases nothing (so a handle value of 0, a valid
// CUdevice, is still owned).
template <typename Kind>
class DriverHandle {
 public:
  using Handle = typename Kind::Handle;

  DriverHandle() = default;
  // Takes `handle`, which `driver` made.
  DriverHandle(const DriverLibrary& driver, Handle handle) : driver_(&driver), handle_(handle) {}
  ~DriverHandle() { reset(); }
  DriverHandle(DriverHandle&& other) noexcept
      : driver_(std::exchange(other.driver_, nullptr)), handle_(std::exchange(other.handle_, {})) {}
  DriverHandle& operator=(DriverHandle&& other) noexcept {
    if (this != &other) {
      reset();
      driver_ = std::exchange(other.driver_, nullptr);
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  DriverHandle(const DriverHandle&) = delete;
  DriverHandle& operator=(const DriverHandle&) = delete;

  // The handle (null or 0 when empty); still owned.
  Handle get() const { return handle_; }
  explicit operator bool() const { return driver_ != nullptr; }

  // Releases the handle now (nothing when empty) and leaves the owner empty.
  void reset() {
    if (driver_ == nullptr) return;
    const DriverLibrary& driver = *std::exchange(driver_, nullptr);
    const Handle handle = std::exchange(handle_, {});
    if (auto st = driver.check((driver.api().*Kind::release)(handle), Kind::call); !st) {
      core::logger().warn("CUDA teardown: {}", st.error().message());
    }
  }
  // Gives the handle up without releasing it (memory a kernel that may still run can read).
  Handle release() {
    driver_ = nullptr;
    return std::exchange(handle_, {});
  }

 private:
  const DriverLibrary* driver_ = nullptr;
  Handle handle_{};
};

using UniqueStream = DriverHandle<driver_handle::Stream>;
using UniqueEvent = DriverHandle<driver_handle::Event>;
using UniqueGreenCtx = DriverHandle<driver_handle::GreenCtx>;
using UniqueDeviceMemory = DriverHandle<driver_handle::DeviceMemory>;
using UniqueHostMemory = DriverHandle<driver_handle::HostMemory>;
using UniqueLibrary = DriverHandle<driver_handle::Library>;
using RetainedPrimaryContext = DriverHandle<driver_handle::PrimaryContext>;

}  // namespace tessera::cuda
