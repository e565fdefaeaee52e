#include "tessera/backends/cuda/cublaslt_library.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {

std::vector<std::string> CublasLt::default_paths() {
  const char* env = std::getenv("TESSERA_CUBLASLT_LIBRARY");
  if (env != nullptr && *env != '\0') return {env};
  return {"libcublasLt.so.13", "libcublasLt.so.12"};
}

core::Result<std::unique_ptr<CublasLt>> CublasLt::open(const std::string& path) {
  const std::vector<std::string> paths = path.empty() ? default_paths() : std::vector{path};
  std::unique_ptr<SharedLibrary> lib;
  std::string why;
  for (const auto& file : paths) {
    // Kept mapped: cuBLASLt carries a static C++ runtime whose allocations (its exception pool,
    // its handles' caches) outlive cublasLtDestroy.
    auto loaded = SharedLibrary::open(file, core::Domain::kCuda, SharedLibrary::Unload::kNever);
    if (loaded) {
      lib = std::move(*loaded);
      break;
    }
    why += (why.empty() ? "" : "; ") + loaded.error().message();
  }
  if (lib == nullptr) {
    return core::failf(core::Domain::kCuda, core::Code::kNotFound,
                       "cuBLASLt is not available ({}): install the CUDA toolkit's cuBLAS "
                       "(libcublasLt.so.13) or set TESSERA_CUBLASLT_LIBRARY to the file",
                       why);
  }
  CublasLtApi api;
  TESSERA_TRY(lib->resolve("cublasLtCreate", api.create));
  TESSERA_TRY(lib->resolve("cublasLtDestroy", api.destroy));
  TESSERA_TRY(lib->resolve("cublasLtGetVersion", api.get_version));
  TESSERA_TRY(lib->resolve("cublasLtGetStatusString", api.get_status_string));
  TESSERA_TRY(lib->resolve("cublasLtMatmulDescCreate", api.matmul_desc_create));
  TESSERA_TRY(lib->resolve("cublasLtMatmulDescSetAttribute", api.matmul_desc_set_attribute));
  TESSERA_TRY(lib->resolve("cublasLtMatmulDescDestroy", api.matmul_desc_destroy));
  TESSERA_TRY(lib->resolve("cublasLtMatrixLayoutCreate", api.matrix_layout_create));
  TESSERA_TRY(lib->resolve("cublasLtMatrixLayoutDestroy", api.matrix_layout_destroy));
  TESSERA_TRY(lib->resolve("cublasLtMatmulPreferenceCreate", api.matmul_preference_create));
  TESSERA_TRY(
      lib->resolve("cublasLtMatmulPreferenceSetAttribute", api.matmul_preference_set_attribute));
  TESSERA_TRY(lib->resolve("cublasLtMatmulPreferenceDestroy", api.matmul_preference_destroy));
  TESSERA_TRY(lib->resolve("cublasLtMatmulAlgoGetHeuristic", api.matmul_algo_get_heuristic));
  TESSERA_TRY(
      lib->resolve("cublasLtMatmulAlgoConfigGetAttribute", api.matmul_algo_config_get_attribute));
  TESSERA_TRY(lib->resolve("cublasLtMatmul", api.matmul));
  return std::unique_ptr<CublasLt>(new CublasLt(std::move(lib), api));
}

core::Status CublasLt::check(cublasStatus_t s, std::string_view call) const {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  const char* text = api_.get_status_string(s);
  return core::failf(core::Domain::kCuda, cublas_error_code(s), "{}: {} (cuBLAS status {})", call,
                     text != nullptr ? text : "unknown status", static_cast<int>(s));
}

core::Code cublas_error_code(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return core::Code::kResourceExhausted;
    case CUBLAS_STATUS_INVALID_VALUE: return core::Code::kInvalidArgument;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_LICENSE_ERROR: return core::Code::kUnsupported;
    case CUBLAS_STATUS_NOT_INITIALIZED: return core::Code::kFailedPrecondition;
    default: return core::Code::kInternal;
  }
}

core::Result<std::unique_ptr<CublasLtHandle>> CublasLtHandle::create(const CublasLt& lt) {
  cublasLtHandle_t handle = nullptr;
  const cublasStatus_t s = lt.api().create(&handle);
  if (s != CUBLAS_STATUS_SUCCESS) {
    return std::unexpected(lt.check(s, "cublasLtCreate")
                               .error()
                               .with_context(fmt::format(
                                   "cannot create a cuBLASLt handle with {} (it needs the NVIDIA "
                                   "driver and a GPU)",
                                   lt.path())));
  }
  return std::unique_ptr<CublasLtHandle>(new CublasLtHandle(lt, handle));
}

CublasLtHandle::~CublasLtHandle() {
  if (const auto st = lt_.check(lt_.api().destroy(handle_), "cublasLtDestroy"); !st) {
    core::logger().warn("{}", st.error().message());
  }
}

}  // namespace tessera::cuda
