#pragma once
// cuBLASLt, loaded at run time like the driver (no link-time dependency): open() dlopens the
// library and resolves the calls tessera makes, with the types of the toolkit's cublasLt.h
// (headers only). The decode and training-like models (decode_step.hpp) run their GEMMs through
// it. cuBLAS status codes become core::Error values in core::Domain::kCuda that name the call and
// carry cublasLtGetStatusString's text.

#include <cublasLt.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/shared_library.hpp"

namespace tessera::cuda {

// Each field has the exact type of the function cublasLt.h declares.
struct CublasLtApi {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtGetStatusString) get_status_string = nullptr;
  decltype(&::cublasLtMatmulDescCreate) matmul_desc_create = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) matmul_desc_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) matrix_layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) matrix_layout_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) matmul_preference_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) matmul_preference_set_attribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) matmul_preference_destroy = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) matmul_algo_get_heuristic = nullptr;
  decltype(&::cublasLtMatmulAlgoConfigGetAttribute) matmul_algo_config_get_attribute = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};

class CublasLt {
 public:
  // The files open() tries, in order: $TESSERA_CUBLASLT_LIBRARY alone when it is set; else
  // libcublasLt.so.13 (the toolkit tessera is built against, CUDA 13) and libcublasLt.so.12
  // (whose ABI for these calls is the same), found on the loader's search path.
  static std::vector<std::string> default_paths();
  // Loads `path` (empty: the first of default_paths() that loads) and resolves every call. Needs
  // no GPU: cublasLtCreate, which does, is the caller's (CublasLtHandle). The error names every
  // file tried and how to point tessera at another.
  static core::Result<std::unique_ptr<CublasLt>> open(const std::string& path = {});
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;

  const CublasLtApi& api() const { return api_; }
  const std::string& path() const { return library_->path(); }
  // cublasLtGetVersion: major * 10000 + minor * 100 + patch (130100 is 13.1.0).
  std::size_t version() const { return api_.get_version(); }

  // Ok for CUBLAS_STATUS_SUCCESS; otherwise "<call>: <status string> (cuBLAS status N)" in
  // Domain::kCuda with cublas_error_code(s).
  core::Status check(cublasStatus_t s, std::string_view call) const;

 private:
  CublasLt(std::unique_ptr<SharedLibrary> library, CublasLtApi api)
      : library_(std::move(library)), api_(api) {}
  std::unique_ptr<SharedLibrary> library_;
  CublasLtApi api_;
};

// The error code status `s` maps to: alloc failed: kResourceExhausted; invalid value:
// kInvalidArgument; not supported / arch mismatch / license: kUnsupported; not initialized:
// kFailedPrecondition (usually no GPU or no current context); anything else: kInternal.
core::Code cublas_error_code(cublasStatus_t s);

// A cuBLASLt handle (cublasLtCreate needs the CUDA driver and a device: it fails without a GPU,
// and the error says so). Destroyed with the object.
class CublasLtHandle {
 public:
  static core::Result<std::unique_ptr<CublasLtHandle>> create(const CublasLt& lt);
  ~CublasLtHandle();
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;

  cublasLtHandle_t get() const { return handle_; }
  const CublasLt& lt() const { return lt_; }

 private:
  CublasLtHandle(const CublasLt& lt, cublasLtHandle_t handle) : lt_(lt), handle_(handle) {}
  const CublasLt& lt_;
  cublasLtHandle_t handle_;
};

}  // namespace tessera::cuda
