#include "tessera/backends/cuda/kernel_module.hpp"

#include "tessera/core/try.hpp"

extern "C" const unsigned char tessera_fatbin_tessera_kernels[];
extern "C" const unsigned long long tessera_fatbin_tessera_kernels_size;

namespace tessera::cuda {

std::span<const unsigned char> tessera_kernels_image() {
  return {tessera_fatbin_tessera_kernels,
          static_cast<std::size_t>(tessera_fatbin_tessera_kernels_size)};
}

core::Result<std::unique_ptr<KernelModule>> KernelModule::load(const DriverLibrary& driver,
                                                               std::span<const unsigned char> image,
                                                               std::string what) {
  if (image.empty()) {
    return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                       "the kernel image {} is empty", what);
  }
  CUlibrary library = nullptr;
  TESSERA_TRY(driver.check(driver.api().library_load_data(&library, image.data(), nullptr, nullptr,
                                                          0, nullptr, nullptr, 0),
                           "cuLibraryLoadData(" + what + ")"));
  return std::unique_ptr<KernelModule>(
      new KernelModule(driver, UniqueLibrary(driver, library), std::move(what)));
}

core::Result<CUkernel> KernelModule::kernel(const std::string& name) {
  if (auto it = kernels_.find(name); it != kernels_.end()) return it->second;
  CUkernel k = nullptr;
  TESSERA_TRY(driver_.check(driver_.api().library_get_kernel(&k, library_.get(), name.c_str()),
                            "cuLibraryGetKernel(" + name + " in " + what_ + ")"));
  kernels_.emplace(name, k);
  return k;
}

core::Status KernelModule::launch_raw(const std::string& name, unsigned grid, unsigned block,
                                      unsigned shared_bytes, CUstream stream, const void* params) {
  TESSERA_ASSIGN_OR_RETURN(CUkernel k, kernel(name));
  void* args[] = {const_cast<void*>(params)};
  return driver_.check(driver_.api().launch_kernel(kernel_function(k), grid, 1, 1, block, 1, 1,
                                                   shared_bytes, stream, args, nullptr),
                       "cuLaunchKernel(" + name + ")");
}

}  // namespace tessera::cuda
