// The fake libnvidia-ml itself: the rules and error codes the backend's tests rely on.

#include <gtest/gtest.h>

#include <array>
#include <memory>

#include "backends/nvml/fake_nvml_env.hpp"

namespace tessera::cuda {
namespace {

class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lib = test::FakeNvmlEnv::open_library();
    ASSERT_TRUE(lib) << lib.error().message();
    lib_ = *lib;
    ASSERT_EQ(api().device_get_handle_by_index(0, &dev_), nvml::kSuccess);
  }
  const NvmlApi& api() const { return lib_->api(); }
  nvml::Return create(unsigned profile_id, unsigned start, unsigned size,
                      nvml::GpuInstance* gi = nullptr) {
    nvml::GpuInstance out = nullptr;
    const nvml::GpuInstancePlacement at{start, size};
    return api().device_create_gpu_instance_with_placement(dev_, profile_id, &at,
                                                           gi != nullptr ? gi : &out);
  }

  test::FakeNvmlEnv env_;
  std::shared_ptr<NvmlLibrary> lib_;
  nvml::Device dev_ = nullptr;
};

TEST_F(FakeNvml, RefusesCreatesTheWayTheDriverDoes) {
  EXPECT_EQ(create(15, 1, 2), nvml::kErrorInvalidArgument);        // 1g.10gb starts at 0, 2, 4, 6
  EXPECT_EQ(create(15, 0, 1), nvml::kErrorInvalidArgument);        // its size is 2 memory slices
  EXPECT_EQ(create(20, 0, 1), nvml::kSuccess);                     // 1g.5gb+me
  EXPECT_EQ(create(20, 1, 1), nvml::kErrorInsufficientResources);  // one media holder
  EXPECT_EQ(create(15, 0, 2), nvml::kErrorInsufficientResources);  // overlaps slice 0
  EXPECT_EQ(create(14, 2, 2), nvml::kSuccess);                     // 2g.10gb
  EXPECT_EQ(create(99, 4, 4), nvml::kErrorInvalidArgument);        // no such profile
  unsigned count = 0;
  std::array<nvml::GpuInstance, 3> gis{};
  ASSERT_EQ(api().device_get_gpu_instances(dev_, 14, gis.data(), &count), nvml::kSuccess);
  EXPECT_EQ(count, 1u);
}

TEST_F(FakeNvml, AGpuInstanceWithAComputeInstanceIsInUse) {
  nvml::GpuInstance gi = nullptr;
  ASSERT_EQ(create(9, 0, 4, &gi), nvml::kSuccess);
  nvml::ComputeInstanceProfileInfo info{};
  ASSERT_EQ(api().gpu_instance_get_compute_instance_profile_info(
                gi, nvml::kComputeInstanceProfile3Slice, nvml::kComputeInstanceEngineProfileShared,
                &info),
            nvml::kSuccess);
  EXPECT_EQ(info.sliceCount, 3u);
  // Larger than the GPU instance: not supported.
  nvml::ComputeInstanceProfileInfo too_big{};
  EXPECT_EQ(api().gpu_instance_get_compute_instance_profile_info(
                gi, nvml::kComputeInstanceProfile4Slice, nvml::kComputeInstanceEngineProfileShared,
                &too_big),
            nvml::kErrorNotSupported);
  nvml::ComputeInstance ci = nullptr;
  ASSERT_EQ(api().gpu_instance_create_compute_instance(gi, info.id, &ci), nvml::kSuccess);
  EXPECT_EQ(api().gpu_instance_destroy(gi), nvml::kErrorInUse);
  ASSERT_EQ(api().compute_instance_destroy(ci), nvml::kSuccess);
  EXPECT_EQ(api().gpu_instance_destroy(gi), nvml::kSuccess);
  EXPECT_EQ(api().gpu_instance_destroy(gi), nvml::kErrorInvalidArgument);  // gone
}

TEST_F(FakeNvml, CallsBeforeInitAreUninitialized) {
  lib_.reset();  // nvmlShutdown
  auto raw = SharedLibrary::open(TESSERA_FAKE_NVML, core::Domain::kNvml);
  ASSERT_TRUE(raw) << raw.error().message();
  nvml::DeviceGetHandleByIndexFn get = nullptr;
  ASSERT_TRUE((*raw)->resolve("nvmlDeviceGetHandleByIndex_v2", get));
  nvml::Device dev = nullptr;
  EXPECT_EQ(get(0, &dev), nvml::kErrorUninitialized);
}

}  // namespace
}  // namespace tessera::cuda
