#include "tessera/backends/nvml/nvml_library.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "backends/nvml/fake_nvml_env.hpp"

namespace tessera::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NvmlLibrary, AMissingLibraryIsAnErrorThatSaysWhatToSet) {
  auto lib = NvmlLibrary::open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().domain(), core::Domain::kNvml);
  EXPECT_EQ(lib.error().code(), core::Code::kNotFound);
  EXPECT_THAT(lib.error().message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_THAT(lib.error().message(), HasSubstr("TESSERA_NVML_LIBRARY"));
}

TEST(NvmlLibrary, ALibraryWithoutAnEntryPointIsAnErrorNamingIt) {
  // The C library loads fine but exports no NVML symbol.
  auto lib = NvmlLibrary::open("libc.so.6");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().domain(), core::Domain::kNvml);
  EXPECT_THAT(lib.error().message(), HasSubstr("does not export nvmlInit_v2"));
}

TEST(NvmlLibrary, DefaultPathIsTheDriversLibraryUnlessTheEnvironmentNamesAnother) {
  unsetenv("TESSERA_NVML_LIBRARY");
  EXPECT_EQ(NvmlLibrary::default_path(), "libnvidia-ml.so.1");
  setenv("TESSERA_NVML_LIBRARY", "/opt/x/libnvidia-ml.so", 1);
  EXPECT_EQ(NvmlLibrary::default_path(), "/opt/x/libnvidia-ml.so");
  unsetenv("TESSERA_NVML_LIBRARY");
}

TEST(NvmlLibrary, OpensTheEnvironmentsLibraryWhenGivenNoPath) {
  test::FakeNvmlEnv env;
  setenv("TESSERA_NVML_LIBRARY", TESSERA_FAKE_NVML, 1);
  auto lib = NvmlLibrary::open();
  unsetenv("TESSERA_NVML_LIBRARY");
  ASSERT_TRUE(lib) << lib.error().message();
  EXPECT_EQ((*lib)->path(), TESSERA_FAKE_NVML);
}

TEST(NvmlLibrary, InitialisesOnOpenAndShutsDownOnDestruction) {
  test::FakeNvmlEnv env;
  {
    auto lib = test::FakeNvmlEnv::open_library();
    ASSERT_TRUE(lib) << lib.error().message();
    EXPECT_EQ(env.log(), std::vector<std::string>{"nvmlInit_v2 -> 0"});
  }
  EXPECT_EQ(env.log(), (std::vector<std::string>{"nvmlInit_v2 -> 0", "nvmlShutdown -> 0"}));
}

TEST(NvmlLibrary, AnInitFailureIsAnErrorWithNvmlsTextAndNoShutdown) {
  test::FakeNvmlEnv env(nlohmann::json{
      {"fail", {{{"call", "nvmlInit_v2"}, {"nth", 1}, {"ret", nvml::kErrorDriverNotLoaded}}}}});
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.error().domain(), core::Domain::kNvml);
  EXPECT_THAT(lib.error().message(), HasSubstr("nvmlInit_v2: Driver Not Loaded (NVML error 9)"));
  EXPECT_THAT(lib.error().message(), HasSubstr("is the NVIDIA driver loaded"));
  EXPECT_THAT(env.log_text(), Not(HasSubstr("nvmlShutdown")));
}

TEST(NvmlLibrary, CheckNamesTheCallAndMapsTheReturnValue) {
  test::FakeNvmlEnv env;
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  EXPECT_TRUE((*lib)->check(nvml::kSuccess, "nvmlX"));

  auto busy = (*lib)->check(nvml::kErrorInsufficientResources, "nvmlDeviceCreateGpuInstance");
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code(), core::Code::kResourceExhausted);
  EXPECT_EQ(busy.error().message(),
            "nvmlDeviceCreateGpuInstance: Insufficient Resources (NVML error 23)");

  auto denied = (*lib)->check(nvml::kErrorNoPermission, "nvmlGpuInstanceDestroy");
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code(), core::Code::kFailedPrecondition);
  EXPECT_THAT(denied.error().message(), HasSubstr("/dev/nvidia-caps"));

  EXPECT_EQ(nvml_error_code(nvml::kErrorNotSupported), core::Code::kUnsupported);
  EXPECT_EQ(nvml_error_code(nvml::kErrorNotFound), core::Code::kNotFound);
  EXPECT_EQ(nvml_error_code(nvml::kErrorInvalidArgument), core::Code::kInvalidArgument);
  EXPECT_EQ(nvml_error_code(nvml::kErrorUnknown), core::Code::kInternal);
}

}  // namespace
}  // namespace tessera::cuda
