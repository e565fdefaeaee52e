// Where tessera stands with the real GPU (backend_status.hpp), in every build.

#include "tessera/backends/cuda/backend_status.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace tessera::cuda {
namespace {

TEST(BackendStatus, BuiltWithCudaFollowsTheBuild) {
#ifdef TESSERA_HAVE_CUDA
  EXPECT_TRUE(built_with_cuda());
#else
  EXPECT_FALSE(built_with_cuda());
#endif
}

TEST(BackendStatus, AMissingDriverIsExplainedNotFatal) {
  const DriverProbe probe = probe_driver("/nonexistent/libcuda.so.1");
  EXPECT_FALSE(probe.available);
  EXPECT_EQ(probe.devices, 0);
#ifdef TESSERA_HAVE_CUDA
  EXPECT_NE(probe.reason.find("no NVIDIA driver"), std::string::npos) << probe.reason;
  EXPECT_NE(probe.reason.find("/nonexistent/libcuda.so.1"), std::string::npos) << probe.reason;
#else
  EXPECT_NE(probe.reason.find("built without the CUDA toolkit"), std::string::npos) << probe.reason;
#endif
}

TEST(BackendStatus, TheToolkitsStubIsNotADriver) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << stub << " is not installed here";
  const DriverProbe probe = probe_driver(stub);
  EXPECT_FALSE(probe.available);
#ifdef TESSERA_HAVE_CUDA
  EXPECT_NE(probe.reason.find("stub"), std::string::npos) << probe.reason;
#endif
}

}  // namespace
}  // namespace tessera::cuda
