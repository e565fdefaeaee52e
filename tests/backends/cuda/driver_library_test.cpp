// DriverLibrary against the fake libcuda: loading through cuGetProcAddress_v2, the errors a user
// sees when there is no usable driver, devices, and the CUresult-to-error mapping.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "support/cuda_test_env.hpp"
#include "tessera/backends/cuda/backend_status.hpp"

namespace tessera::cuda {
namespace {

using nlohmann::json;
using testing::FakeCuda;

TEST(DriverLibrary, OpensTheFakeAndReadsTheDriverVersion) {
  FakeCuda fake(json{{"driver_version", 12080}});
  auto driver = DriverLibrary::open(FakeCuda::path());
  ASSERT_TRUE(driver) << driver.error().message();
  EXPECT_EQ((*driver)->driver_version(), 12080);
  EXPECT_EQ((*driver)->path(), FakeCuda::path());
  EXPECT_TRUE((*driver)->api().has_green_contexts());
  auto count = (*driver)->device_count();
  ASSERT_TRUE(count) << count.error().message();
  EXPECT_EQ(*count, 1);
}

TEST(DriverLibrary, ResolvesEveryEntryPointThroughGetProcAddressByBaseName) {
  FakeCuda fake;
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  int lookups = 0;
  const json log = fake.log();  // a named copy: a range-for over a temporary's member dangles
  for (const auto& c : log["calls"]) {
    if (c["call"] != "cuGetProcAddress") continue;
    EXPECT_EQ(c["ret"], 0);
    ++lookups;
  }
  EXPECT_GE(lookups, 50);  // every field, none through dlsym
  // The fields hold the versioned symbols cuda.h maps the names to.
  void* h = dlopen(FakeCuda::path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(driver->api().mem_alloc), dlsym(h, "cuMemAlloc_v2"));
  EXPECT_EQ(reinterpret_cast<void*>(driver->api().stream_destroy), dlsym(h, "cuStreamDestroy_v2"));
  EXPECT_EQ(reinterpret_cast<void*>(driver->api().event_elapsed_time),
            dlsym(h, "cuEventElapsedTime_v2"));
  // cuda.h declares the pre-13.0 cuCtxSynchronize(void): the field must not get the 13.0 ABI.
  EXPECT_EQ(reinterpret_cast<void*>(driver->api().ctx_synchronize), dlsym(h, "cuCtxSynchronize"));
  EXPECT_EQ(reinterpret_cast<void*>(driver->api().ctx_get_device), dlsym(h, "cuCtxGetDevice"));
  EXPECT_EQ(reinterpret_cast<void*>(driver->api().launch_kernel), dlsym(h, "cuLaunchKernel"));
  dlclose(h);
}

TEST(DriverLibrary, SetsDeviceMaxConnectionsBeforeCuInitUnlessTheUserDid) {
  FakeCuda fake;
  const char* before = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string saved = before != nullptr ? before : "";
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  ASSERT_NE(fake.open_driver(), nullptr);
  EXPECT_EQ(fake.log()["init"]["CUDA_DEVICE_MAX_CONNECTIONS"], "32");
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
  ASSERT_NE(fake.open_driver(), nullptr);
  EXPECT_EQ(fake.log()["init"]["CUDA_DEVICE_MAX_CONNECTIONS"], "4");
  if (before != nullptr) {
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", saved.c_str(), 1);
  } else {
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  }
}

TEST(DriverLibrary, AMissingFileIsNamed) {
  auto driver = DriverLibrary::open("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(driver);
  EXPECT_EQ(driver.error().domain(), core::Domain::kCuda);
  EXPECT_NE(driver.error().message().find("no NVIDIA driver found"), std::string::npos);
  EXPECT_NE(driver.error().message().find("/nonexistent/libcuda.so.1"), std::string::npos);
  EXPECT_NE(driver.error().message().find("TESSERA_CUDA_LIBRARY"), std::string::npos);
}

TEST(DriverLibrary, DefaultPathHonoursTheEnvironment) {
  const char* before = std::getenv("TESSERA_CUDA_LIBRARY");
  const std::string saved = before != nullptr ? before : "";
  setenv("TESSERA_CUDA_LIBRARY", "/opt/x/libcuda.so.1", 1);
  EXPECT_EQ(DriverLibrary::default_path(), "/opt/x/libcuda.so.1");
  unsetenv("TESSERA_CUDA_LIBRARY");
  EXPECT_EQ(DriverLibrary::default_path(), "libcuda.so.1");
  if (before != nullptr) setenv("TESSERA_CUDA_LIBRARY", saved.c_str(), 1);
}

TEST(DriverLibrary, ALibraryWithoutGetProcAddressIsRefused) {
  auto driver = DriverLibrary::open(TESSERA_FAKE_NVML);
  ASSERT_FALSE(driver);
  EXPECT_NE(driver.error().message().find("cuGetProcAddress_v2"), std::string::npos);
  EXPECT_NE(driver.error().message().find(TESSERA_FAKE_NVML), std::string::npos);
  EXPECT_EQ(driver.error().code(), core::Code::kUnsupported);
}

TEST(DriverLibrary, ARequiredEntryPointTheDriverLacksIsNamed) {
  // The first lookup (cuGetErrorName) fails as an old driver's would.
  FakeCuda fake(json{{"fail", {{{"call", "cuGetProcAddress"}, {"nth", 1}, {"ret", 500}}}}});
  auto driver = DriverLibrary::open(FakeCuda::path());
  ASSERT_FALSE(driver);
  EXPECT_NE(driver.error().message().find("does not have cuGetErrorName"), std::string::npos)
      << driver.error().message();
}

TEST(DriverLibrary, CuInitFailureCarriesTheDriversText) {
  FakeCuda fake(json{{"no_device", true}});
  auto driver = DriverLibrary::open(FakeCuda::path());
  ASSERT_FALSE(driver);
  const std::string& m = driver.error().message();
  EXPECT_NE(m.find("cuInit"), std::string::npos) << m;
  EXPECT_NE(m.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << m;
  EXPECT_NE(m.find("no CUDA-capable device is detected"), std::string::npos) << m;
  EXPECT_EQ(driver.error().code(), core::Code::kUnsupported);
}

TEST(DriverLibrary, WithoutGreenContextsOpenStillSucceeds) {
  FakeCuda fake(json{{"green_contexts", false}});
  auto driver = DriverLibrary::open(FakeCuda::path());
  ASSERT_TRUE(driver) << driver.error().message();
  EXPECT_FALSE((*driver)->api().has_green_contexts());
  EXPECT_EQ((*driver)->api().green_ctx_create, nullptr);
  EXPECT_NE((*driver)->api().launch_kernel, nullptr);
}

TEST(DriverLibrary, DeviceFieldsComeFromTheDriver) {
  FakeCuda fake(json{{"devices",
                      {{{"name", "NVIDIA H200"}, {"sms", 132}},
                       {{"name", "NVIDIA A100-SXM4-40GB"},
                        {"sms", 108},
                        {"cc", {8, 0}},
                        {"memory_mib", 40960},
                        {"clock_khz", 1410000},
                        {"uuid", "GPU-12345678-9abc-def0-1234-56789abcdef0"}}}}});
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  ASSERT_EQ(*driver->device_count(), 2);
  auto d = driver->device(1);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->ordinal, 1);
  EXPECT_EQ(d->name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(d->sms, 108);
  EXPECT_EQ(d->compute_capability_major, 8);
  EXPECT_EQ(d->compute_capability_minor, 0);
  EXPECT_EQ(d->memory_bytes, std::int64_t{40960} * 1024 * 1024);
  EXPECT_EQ(d->sm_clock_khz, 1410000);
  EXPECT_EQ(d->uuid, "GPU-12345678-9abc-def0-1234-56789abcdef0");
  EXPECT_TRUE(d->unified_addressing);
  EXPECT_TRUE(d->can_map_host_memory);
  auto missing = driver->device(2);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("cuDeviceGet"), std::string::npos);
  EXPECT_NE(missing.error().message().find("CUDA_ERROR_INVALID_DEVICE"), std::string::npos);
}

TEST(DriverLibrary, CheckNamesTheCallTheErrorAndItsCode) {
  FakeCuda fake;
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  EXPECT_TRUE(driver->check(CUDA_SUCCESS, "cuMemAlloc"));
  auto s = driver->check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory (CUDA error 2)");
  EXPECT_EQ(s.error().code(), core::Code::kResourceExhausted);
  // A code no error has, yet inside CUresult's range (its enumerators end at 999).
  auto unknown = driver->check(static_cast<CUresult>(1000), "cuX");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("CUDA error 1000"), std::string::npos);
  EXPECT_EQ(unknown.error().code(), core::Code::kInternal);
}

TEST(DriverLibrary, ErrorCodesMapToTesseraCodes) {
  EXPECT_EQ(driver_error_code(CUDA_ERROR_OUT_OF_MEMORY), core::Code::kResourceExhausted);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_INVALID_VALUE), core::Code::kInvalidArgument);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_INVALID_HANDLE), core::Code::kInvalidArgument);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION),
            core::Code::kInvalidArgument);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_NOT_SUPPORTED), core::Code::kUnsupported);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_NO_DEVICE), core::Code::kUnsupported);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_STUB_LIBRARY), core::Code::kUnsupported);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_NOT_FOUND), core::Code::kNotFound);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_NOT_READY), core::Code::kFailedPrecondition);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_NOT_INITIALIZED), core::Code::kFailedPrecondition);
  EXPECT_EQ(driver_error_code(CUDA_ERROR_ILLEGAL_ADDRESS), core::Code::kInternal);
}

TEST(DriverLibrary, TheToolkitsStubIsRecognised) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << stub << " is not installed here";
  auto driver = DriverLibrary::open(stub);
  ASSERT_FALSE(driver);
  EXPECT_NE(driver.error().message().find("stub"), std::string::npos) << driver.error().message();
  EXPECT_EQ(driver.error().code(), core::Code::kUnsupported);
}

TEST(DriverProbe, TheFakeIsAnAvailableDriver) {
  FakeCuda fake(json{{"devices", {json::object(), json::object()}}});
  const DriverProbe probe = probe_driver(FakeCuda::path());
  EXPECT_TRUE(probe.available) << probe.reason;
  EXPECT_EQ(probe.devices, 2);
  EXPECT_EQ(probe.driver_version, 13000);
  EXPECT_TRUE(probe.reason.empty());
}

TEST(DriverProbe, NoDeviceIsExplained) {
  FakeCuda fake(json{{"no_device", true}});
  const DriverProbe probe = probe_driver(FakeCuda::path());
  EXPECT_FALSE(probe.available);
  EXPECT_NE(probe.reason.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << probe.reason;
}

// The real driver, where there is one (scripts/device-check.sh runs this on a GPU).
TEST(RealGpuDriverLibrary, OpensTheInstalledDriverAndDescribesItsDevices) {
  REAL_GPU_OR_SKIP(driver);
  EXPECT_GE(driver->driver_version(), CUDA_VERSION);
  auto d = driver->device(0);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_GT(d->sms, 0);
  EXPECT_FALSE(d->name.empty());
  EXPECT_EQ(d->uuid.size(), 40u) << d->uuid;  // "GPU-" + 36
  EXPECT_EQ(d->uuid.rfind("GPU-", 0), 0u);
  EXPECT_TRUE(driver->api().has_green_contexts()) << "a CUDA 13 driver has green contexts";
  std::printf("real driver %d: %s, %d SMs, cc %d.%d, %lld MiB, %s\n", driver->driver_version(),
              d->name.c_str(), d->sms, d->compute_capability_major, d->compute_capability_minor,
              static_cast<long long>(d->memory_bytes >> 20), d->uuid.c_str());
}

// On a real driver: cuCtxSynchronize and cuCtxGetDevice at 13000 are the new ABI, and the fields
// (resolved with the old one) work as cuda.h declares them.
TEST(RealGpuDriverLibrary, ContextCallsUseTheAbiCudaHDeclares) {
  REAL_GPU_OR_SKIP(driver);
  void* h = dlopen(driver->path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  using Gpa = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto gpa = reinterpret_cast<Gpa>(dlsym(h, "cuGetProcAddress_v2"));
  ASSERT_NE(gpa, nullptr);
  void* old_abi = nullptr;
  void* new_abi = nullptr;
  CUdriverProcAddressQueryResult st{};
  ASSERT_EQ(gpa("cuCtxSynchronize", &old_abi, 2000, 0, &st), CUDA_SUCCESS);
  ASSERT_EQ(gpa("cuCtxSynchronize", &new_abi, 13000, 0, &st), CUDA_SUCCESS);
  EXPECT_NE(old_abi, new_abi) << "cudaTypedefs.h says 13.0 introduced a new cuCtxSynchronize";
  dlclose(h);
  const DriverApi& api = driver->api();
  CUcontext ctx = nullptr;
  ASSERT_EQ(api.primary_ctx_retain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.ctx_set_current(ctx), CUDA_SUCCESS);
  EXPECT_EQ(api.ctx_synchronize(), CUDA_SUCCESS);
  CUdevice dev = -1;
  EXPECT_EQ(api.ctx_get_device(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(api.ctx_set_current(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api.primary_ctx_release(0), CUDA_SUCCESS);
}

}  // namespace
}  // namespace tessera::cuda
