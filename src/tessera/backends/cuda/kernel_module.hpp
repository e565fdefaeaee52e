#pragma once
// tessera's own kernels, compiled by nvcc into a fatbin that is embedded in the binary
// (tessera_add_fatbin in cmake/TesseraCuda.cmake) and loaded here as a context-independent CUDA
// library (cuLibraryLoadData), so one load serves the primary context and every green context.

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "tessera/backends/cuda/driver_handles.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {

// The embedded fatbins of src/tessera/backends/cuda/kernels/*.cu (defined by the generated
// embedding source).
std::span<const unsigned char> tessera_kernels_image();  // kernels/tessera_kernels.cu

class KernelModule {
 public:
  // Loads `image` (a fatbin or cubin) with cuLibraryLoadData. `what` names it in errors.
  static core::Result<std::unique_ptr<KernelModule>> load(const DriverLibrary& driver,
                                                          std::span<const unsigned char> image,
                                                          std::string what);
  KernelModule(const KernelModule&) = delete;
  KernelModule& operator=(const KernelModule&) = delete;

  // The kernel `name` (extern "C" in the .cu), looked up once and cached; the error names the
  // kernel and the module. Pass it to cuLaunchKernel as a CUfunction (kernel_function()).
  core::Result<CUkernel> kernel(const std::string& name);
  static CUfunction kernel_function(CUkernel k) { return reinterpret_cast<CUfunction>(k); }

  // Launches `name` with one by-value struct argument (kernel_params.h's convention).
  template <typename Params>
  core::Status launch(const std::string& name, unsigned grid, unsigned block, unsigned shared_bytes,
                      CUstream stream, const Params& params) {
    return launch_raw(name, grid, block, shared_bytes, stream, &params);
  }

 private:
  KernelModule(const DriverLibrary& driver, UniqueLibrary library, std::string what)
      : driver_(driver), library_(std::move(library)), what_(std::move(what)) {}
  core::Status launch_raw(const std::string& name, unsigned grid, unsigned block,
                          unsigned shared_bytes, CUstream stream, const void* params);
  const DriverLibrary& driver_;
  UniqueLibrary library_;  // unloaded with the module
  std::string what_;
  std::map<std::string, CUkernel> kernels_;
};

}  // namespace tessera::cuda
