#pragma once
// What the kernel and control-channel tests need on one device, fake or real: the primary context
// current, a few streams, the embedded kernels loaded, and device buffers that free themselves.
// Failures are returned, never asserted, so tests and benchmarks report them their own way.

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/try.hpp"

namespace tessera::testing {

class KernelSession {
 public:
  static core::Result<std::unique_ptr<KernelSession>> open(const cuda::DriverLibrary& driver,
                                                           int streams) {
    auto s = std::unique_ptr<KernelSession>(new KernelSession(driver));
    const cuda::DriverApi& api = driver.api();
    TESSERA_TRY(driver.check(api.device_get(&s->device_, 0), "cuDeviceGet"));
    TESSERA_TRY(
        driver.check(api.primary_ctx_retain(&s->context_, s->device_), "cuDevicePrimaryCtxRetain"));
    TESSERA_TRY(driver.check(api.ctx_set_current(s->context_), "cuCtxSetCurrent"));
    for (int i = 0; i < streams; ++i) {
      CUstream stream = nullptr;
      TESSERA_TRY(
          driver.check(api.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
      s->streams_.push_back(stream);
    }
    TESSERA_ASSIGN_OR_RETURN(
        s->module_,
        cuda::KernelModule::load(driver, cuda::tessera_kernels_image(), "tessera kernels"));
    return s;
  }
  ~KernelSession() {
    const cuda::DriverApi& api = driver_.api();
    for (CUstream s : streams_) api.stream_synchronize(s);
    for (CUdeviceptr p : buffers_) api.mem_free(p);
    module_.reset();
    for (CUstream s : streams_) api.stream_destroy(s);
    if (context_ != nullptr) api.primary_ctx_release(device_);
  }
  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;

  const cuda::DriverLibrary& driver() const { return driver_; }
  cuda::KernelModule& module() { return *module_; }
  CUstream stream(int i) const { return streams_.at(static_cast<std::size_t>(i)); }
  CUdevice device() const { return device_; }

  // A zeroed device buffer, freed with the session.
  core::Result<CUdeviceptr> alloc(std::size_t bytes) {
    CUdeviceptr p = 0;
    TESSERA_TRY(driver_.check(driver_.api().mem_alloc(&p, bytes), "cuMemAlloc"));
    buffers_.push_back(p);
    TESSERA_TRY(driver_.check(driver_.api().memset_d8(p, 0, bytes), "cuMemsetD8"));
    TESSERA_TRY(sync_legacy());
    return p;
  }
  // After the kernels that wrote `p` were synchronised (sync(stream)): the copy runs on the
  // legacy stream, which does not wait for the session's non-blocking streams.
  template <typename T>
  core::Result<std::vector<T>> read(CUdeviceptr p, std::size_t count) const {
    std::vector<T> out(count);
    TESSERA_TRY(
        driver_.check(driver_.api().memcpy_dtoh(out.data(), p, count * sizeof(T)), "cuMemcpyDtoH"));
    return out;
  }
  // Synchronous from pageable memory returns before the DMA lands (CUDA driver API docs, "API
  // synchronization behavior"); the legacy stream's sync makes it visible to later launches.
  template <typename T>
  core::Status write(CUdeviceptr p, const std::vector<T>& values) const {
    TESSERA_TRY(driver_.check(
        driver_.api().memcpy_htod(p, values.data(), values.size() * sizeof(T)), "cuMemcpyHtoD"));
    return sync_legacy();
  }
  // The legacy default stream only: the resident control kernel's non-blocking stream is not
  // waited for (cuCtxSynchronize would wait for it forever).
  core::Status sync_legacy() const {
    return driver_.check(driver_.api().stream_synchronize(nullptr), "cuStreamSynchronize(legacy)");
  }
  core::Status sync(int stream) const {
    return driver_.check(driver_.api().stream_synchronize(this->stream(stream)),
                         "cuStreamSynchronize");
  }

 private:
  explicit KernelSession(const cuda::DriverLibrary& driver) : driver_(driver) {}
  const cuda::DriverLibrary& driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::vector<CUstream> streams_;
  std::unique_ptr<cuda::KernelModule> module_;
  std::vector<CUdeviceptr> buffers_;
};

}  // namespace tessera::testing
