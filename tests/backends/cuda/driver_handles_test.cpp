// The driver handle owners (driver_handles.hpp) against the fake libcuda: each handle is released
// exactly once, by the owner that holds it last, and never after release().

#include "tessera/backends/cuda/driver_handles.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/cuda_test_env.hpp"

namespace tessera::cuda {
namespace {

using nlohmann::json;
using testing::FakeCuda;

class DriverHandlesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.reset(json::object());
    driver_ = fake_.open_driver();
    ASSERT_NE(driver_, nullptr);
    ASSERT_EQ(api().primary_ctx_retain(&primary_, 0), CUDA_SUCCESS);
    ASSERT_EQ(api().ctx_set_current(primary_), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (driver_ != nullptr) api().primary_ctx_release(0);
  }
  const DriverApi& api() const { return driver_->api(); }
  // The return codes of every call to `name` so far, in order.
  std::vector<int> returns_of(const std::string& name) const {
    std::vector<int> out;
    const json log = fake_.log();
    for (const auto& call : log["calls"]) {
      if (call.at("call") == name) out.push_back(call.at("ret").get<int>());
    }
    return out;
  }
  CUstream make_stream() {
    CUstream s = nullptr;
    EXPECT_EQ(api().stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    return s;
  }

  FakeCuda fake_;
  std::unique_ptr<DriverLibrary> driver_;
  CUcontext primary_ = nullptr;
};

TEST_F(DriverHandlesTest, AnOwnerReleasesItsHandleOnceWhenItGoes) {
  CUdeviceptr p = 0;
  ASSERT_EQ(api().mem_alloc(&p, 64), CUDA_SUCCESS);
  {
    UniqueDeviceMemory memory(*driver_, p);
    EXPECT_TRUE(memory);
    EXPECT_EQ(memory.get(), p);
    EXPECT_TRUE(returns_of("cuMemFree").empty());
  }
  EXPECT_EQ(returns_of("cuMemFree"), (std::vector<int>{CUDA_SUCCESS}));
}

TEST_F(DriverHandlesTest, ResetReleasesNowAndLeavesTheOwnerEmpty) {
  UniqueStream stream(*driver_, make_stream());
  stream.reset();
  EXPECT_FALSE(stream);
  EXPECT_EQ(stream.get(), nullptr);
  stream.reset();  // empty: nothing more to release
  EXPECT_EQ(returns_of("cuStreamDestroy"), (std::vector<int>{CUDA_SUCCESS}));
}

TEST_F(DriverHandlesTest, MovingHandsTheHandleOverAndAssignmentReleasesTheOldOne) {
  const CUstream first = make_stream();
  const CUstream second = make_stream();
  UniqueStream a(*driver_, first);
  UniqueStream b = std::move(a);
  EXPECT_FALSE(a);  // a moved-from owner is empty
  EXPECT_EQ(b.get(), first);
  UniqueStream c(*driver_, second);
  c = std::move(b);  // `second` goes now
  EXPECT_EQ(c.get(), first);
  EXPECT_EQ(returns_of("cuStreamDestroy").size(), 1u);
  c.reset();
  EXPECT_EQ(returns_of("cuStreamDestroy"), (std::vector<int>{CUDA_SUCCESS, CUDA_SUCCESS}));
}

TEST_F(DriverHandlesTest, ReleaseGivesTheHandleUpWithoutFreeingIt) {
  void* host = nullptr;
  ASSERT_EQ(api().mem_host_alloc(&host, 64, 0), CUDA_SUCCESS);
  {
    UniqueHostMemory memory(*driver_, host);
    EXPECT_EQ(memory.release(), host);
    EXPECT_FALSE(memory);
  }
  EXPECT_TRUE(returns_of("cuMemFreeHost").empty());
  EXPECT_EQ(api().mem_free_host(host), CUDA_SUCCESS);  // still allocated, so this succeeds
}

TEST_F(DriverHandlesTest, DeviceZeroIsAHandleLikeAnyOther) {
  CUcontext again = nullptr;
  ASSERT_EQ(api().primary_ctx_retain(&again, 0), CUDA_SUCCESS);
  { RetainedPrimaryContext retained(*driver_, 0); }
  EXPECT_EQ(returns_of("cuDevicePrimaryCtxRelease"), (std::vector<int>{CUDA_SUCCESS}));
}

TEST_F(DriverHandlesTest, AFailedReleaseStillEmptiesTheOwner) {
  const CUstream s = make_stream();
  ASSERT_EQ(api().stream_destroy(s), CUDA_SUCCESS);
  UniqueStream stale(*driver_, s);
  stale.reset();  // the driver refuses a destroyed handle; teardown carries on
  EXPECT_FALSE(stale);
  const auto returns = returns_of("cuStreamDestroy");
  ASSERT_EQ(returns.size(), 2u);
  EXPECT_EQ(returns[1], CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace
}  // namespace tessera::cuda
