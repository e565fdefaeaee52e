#pragma once
// The two drivers the CUDA backend's tests run against:
//  - the fake libcuda (tests/support/native/fake_cuda), loaded by path, scripted per test through
//    fake_cuda_reset and inspected through its execution log;
//  - the real driver, for tests that need a GPU: they skip, naming the script that runs them,
//    where there is none.
// Test targets that use the fake get TESSERA_FAKE_CUDA (its path) from
// tests/backends/cuda/CMakeLists.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tessera/backends/cuda/driver_library.hpp"

namespace tessera::testing {

// The fake's control functions, from the same handle the code under test loaded.
class FakeCuda {
 public:
  // Loads the fake (the handle stays open for the test's life) and resets it with `script`
  // (fake_cuda_control.h). Fails the test if the script is rejected.
  explicit FakeCuda(const nlohmann::json& script = nlohmann::json::object()) {
#ifdef TESSERA_FAKE_CUDA
    handle_ = dlopen(TESSERA_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
#endif
    if (handle_ == nullptr) {
      ADD_FAILURE() << "cannot load the fake libcuda";
      return;
    }
    reset_ = reinterpret_cast<int (*)(const char*)>(dlsym(handle_, "fake_cuda_reset"));
    log_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "fake_cuda_log_json"));
    progress_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fake_cuda_progress"));
    error_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "fake_cuda_last_error"));
    reset(script);
  }
  ~FakeCuda() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeCuda(const FakeCuda&) = delete;
  FakeCuda& operator=(const FakeCuda&) = delete;

  static std::string path() {
#ifdef TESSERA_FAKE_CUDA
    return TESSERA_FAKE_CUDA;
#else
    return {};
#endif
  }
  void reset(const nlohmann::json& script) {
    if (reset_ == nullptr) return;
    const std::string text = script.dump();
    if (reset_(text.c_str()) != 0) ADD_FAILURE() << "fake_cuda_reset: " << error_();
  }
  // The execution log (fake_cuda_control.h).
  nlohmann::json log() const {
    return log_ != nullptr ? nlohmann::json::parse(log_()) : nlohmann::json();
  }
  void progress() const {
    if (progress_ != nullptr) progress_();
  }
  // A DriverLibrary over the fake (after reset: cuInit reads the script state).
  std::unique_ptr<cuda::DriverLibrary> open_driver() const {
    auto driver = cuda::DriverLibrary::open(path());
    if (!driver) {
      ADD_FAILURE() << driver.error().message();
      return nullptr;
    }
    return std::move(*driver);
  }

 private:
  void* handle_ = nullptr;
  int (*reset_)(const char*) = nullptr;
  const char* (*log_)() = nullptr;
  void (*progress_)() = nullptr;
  const char* (*error_)() = nullptr;
};

// The real driver, or nullptr after GTEST_SKIP-ing with the reason (use REAL_GPU_OR_SKIP).
inline std::unique_ptr<cuda::DriverLibrary> real_driver(std::string* why) {
  auto driver = cuda::DriverLibrary::open();
  if (!driver) {
    *why = driver.error().message();
    return nullptr;
  }
  auto count = (*driver)->device_count();
  if (!count || *count == 0) {
    *why = count ? "the driver reports no GPU" : count.error().message();
    return nullptr;
  }
  return std::move(*driver);
}

}  // namespace tessera::testing

// Declares `var`, the real driver, or skips the test: "needs a GPU (<why>); scripts/device-check.sh
// runs this test on one".
#define REAL_GPU_OR_SKIP(var)                                           \
  std::string var##_why;                                                \
  auto var = ::tessera::testing::real_driver(&var##_why);               \
  if (var == nullptr) {                                                 \
    GTEST_SKIP() << "needs a GPU (" << var##_why                        \
                 << "); scripts/device-check.sh runs this test on one"; \
  }
