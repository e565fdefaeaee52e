#include "tessera/dra/claim_allocation.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "claim_fixtures.hpp"

namespace tessera::dra {
namespace {

const ClaimRef kRef{
    .ns = "serving", .name = "vllm-7d9f8-gpu-x2k4p", .uid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f"};

std::string error_of(const nlohmann::json& claim, const ClaimRef& ref = kRef) {
  auto a = read_allocation(claim, ref, "gpu.tessera.io", "node-a");
  return a ? std::string() : a.error().message();
}

TEST(ClaimAllocation, ReadsTheShareAndTheClaimsConfigOverTheClasss) {
  auto a = read_allocation(test::allocated_claim(), kRef, "gpu.tessera.io", "node-a");
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_EQ(a->shares.size(), 1u);
  const AllocatedShare& s = a->shares[0];
  EXPECT_EQ(s.request, "gpu");
  EXPECT_EQ(s.pool, "node-a");
  EXPECT_EQ(s.device, "gpu-0");
  EXPECT_EQ(s.gpu, 0);
  EXPECT_DOUBLE_EQ(s.settings.sm_share, 0.5);
  EXPECT_EQ(s.settings.memory_limit, 20ull << 30);
  EXPECT_EQ(s.settings.tenant_class, daemon::TenantClass::kLatencyCritical);
  EXPECT_EQ(s.settings.priority, 10);
  EXPECT_EQ(s.settings.tpot_slo, core::millis(50));
  EXPECT_EQ(s.settings.ttft_slo, core::seconds(1));
}

TEST(ClaimAllocation, TheClasssConfigAppliesWhereTheClaimSaysNothing) {
  nlohmann::json claim = test::allocated_claim("6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f", "gpu-3");
  claim["status"]["allocation"]["devices"]["config"].erase(1);
  auto a = read_allocation(claim, kRef, "gpu.tessera.io", "node-a");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_EQ(a->shares[0].gpu, 3);
  EXPECT_EQ(a->shares[0].settings.tenant_class, daemon::TenantClass::kBestEffort);
  EXPECT_EQ(a->shares[0].settings.priority, 1);
  EXPECT_EQ(a->shares[0].settings.tpot_slo, 0);
}

TEST(ClaimAllocation, ADeviceAllocatedWholeIsEverySmWithoutAMemoryLimit) {
  nlohmann::json claim = test::allocated_claim();
  claim["status"]["allocation"]["devices"]["results"][0].erase("consumedCapacity");
  auto a = read_allocation(claim, kRef, "gpu.tessera.io", "node-a");
  ASSERT_TRUE(a) << a.error().message();
  EXPECT_DOUBLE_EQ(a->shares[0].settings.sm_share, 1.0);
  EXPECT_EQ(a->shares[0].settings.memory_limit, 0u);
}

TEST(ClaimAllocation, ErrorsNameTheClaimAndWhatIsWrong) {
  ClaimRef other = kRef;
  other.uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_NE(error_of(test::allocated_claim(), other).find("deleted and made again"),
            std::string::npos);
  nlohmann::json claim = test::allocated_claim();
  claim["status"].erase("allocation");
  EXPECT_NE(error_of(claim).find("claim serving/vllm-7d9f8-gpu-x2k4p: it is not allocated"),
            std::string::npos);
  auto other_pool = read_allocation(test::allocated_claim(), kRef, "gpu.tessera.io", "node-b");
  ASSERT_FALSE(other_pool);
  EXPECT_NE(other_pool.error().message().find("no device of driver gpu.tessera.io in pool node-b"),
            std::string::npos);
  EXPECT_NE(error_of(test::allocated_claim(kRef.uid, "mig-1g")).find("not one of this driver's"),
            std::string::npos);
  EXPECT_NE(error_of(test::allocated_claim(kRef.uid, "gpu-0", "150")).find("1-100"),
            std::string::npos);
  EXPECT_NE(error_of(test::allocated_claim(kRef.uid, "gpu-0", "12.5")).find("whole percentage"),
            std::string::npos);
  EXPECT_NE(error_of(test::allocated_claim(kRef.uid, "gpu-0", "50", "20Gb")).find("memory"),
            std::string::npos);
}

TEST(ClaimAllocation, ConfigTyposAndOverreachAreRefused) {
  auto with_params = [](nlohmann::json params) {
    nlohmann::json claim = test::allocated_claim();
    auto& p = claim["status"]["allocation"]["devices"]["config"][1]["opaque"]["parameters"];
    p.update(params);
    return claim;
  };
  EXPECT_NE(error_of(with_params({{"tpotSlo", "50ms"}})).find("unknown field 'tpotSlo'"),
            std::string::npos);
  EXPECT_NE(error_of(with_params({{"class", "gold"}})).find("'class' must be"), std::string::npos);
  EXPECT_NE(error_of(with_params({{"priority", 5000}})).find("[-1000, 1000]"), std::string::npos);
  EXPECT_NE(error_of(with_params({{"tpotSLO", "fast"}})).find("not a duration"), std::string::npos);
  EXPECT_NE(error_of(with_params({{"kind", "Other"}})).find("kind GpuShareConfig"),
            std::string::npos);
  EXPECT_NE(error_of(with_params({{"memoryLimit", "40Gi"}})).find("more than the"),
            std::string::npos);
  auto lower =
      read_allocation(with_params({{"memoryLimit", "8Gi"}}), kRef, "gpu.tessera.io", "node-a");
  ASSERT_TRUE(lower) << lower.error().message();
  EXPECT_EQ(lower->shares[0].settings.memory_limit, 8ull << 30);
}

TEST(ClaimAllocation, DeviceNamesMapToGpuIndexes) {
  EXPECT_EQ(gpu_of_device("gpu-0").value(), 0);
  EXPECT_EQ(gpu_of_device("gpu-63").value(), 63);
  for (const char* bad : {"gpu-", "gpu-x", "gpu--1", "gpu-1a", "GPU-1", "gpu-99999"}) {
    EXPECT_FALSE(gpu_of_device(bad)) << bad;
  }
}

}  // namespace
}  // namespace tessera::dra
