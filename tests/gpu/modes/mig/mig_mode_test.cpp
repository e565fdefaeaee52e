// The mig mode's instances: profiles from the tenants' shares, placements the driver accepts,
// each instance's SMs, bandwidth of its memory slices and memory; worked out from the MIG User
// Guide's tables (hw/mig_profiles.cpp).

#include "tessera/gpu/modes/mig/mig_mode.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/mode_test_util.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::gpu {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

hw::GpuSpec gpu(std::string_view name) {
  auto spec = hw::find_gpu(name);
  EXPECT_TRUE(spec.has_value());
  return *spec;
}

TEST(MigInstances, SevenTenantsGetA1gInstanceEach) {
  // A100 40GB: 1g.5gb has 14 SMs and one of the 8 memory slices.
  const auto plans = plan_mig_instances(
      gpu("A100-SXM4-40GB"),
      tenants({{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}, {"e", 0}, {"f", 0}, {"g", 0}}));
  ASSERT_TRUE(plans.has_value()) << plans.error().message();
  ASSERT_EQ(plans->size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    const auto& p = (*plans)[i];
    EXPECT_EQ(p.label, "1g.5gb");
    EXPECT_EQ(p.sms, 14);
    EXPECT_EQ(p.first_sm, 14 * static_cast<int>(i));
    EXPECT_DOUBLE_EQ(p.bandwidth_share, 1.0 / 8);
    EXPECT_EQ(p.memory_bytes, 5 * kGiB);
  }
}

TEST(MigInstances, SharesAskForTheSmallestProfileAndTheRestSplitWhatIsLeft) {
  // H100: 0.5 of 7 slices asks for 4 (4g.40gb, 64 SMs, 4 memory slices, placed at 0); the other
  // tenant takes the 3 left (3g.40gb, 60 SMs), at its placement 4.
  const auto plans = plan_mig_instances(gpu("H100-SXM5-80GB"), tenants({{"chat", 0.5}, {"t", 0}}));
  ASSERT_TRUE(plans.has_value()) << plans.error().message();
  EXPECT_EQ((*plans)[0].label, "4g.40gb");
  EXPECT_EQ((*plans)[0].sms, 64);
  EXPECT_EQ((*plans)[0].first_sm, 0);
  EXPECT_EQ((*plans)[1].label, "3g.40gb");
  EXPECT_EQ((*plans)[1].sms, 60);
  EXPECT_EQ((*plans)[1].first_sm, 64);
  for (const auto& p : *plans) {
    EXPECT_DOUBLE_EQ(p.bandwidth_share, 0.5);
    EXPECT_EQ(p.memory_bytes, 40 * kGiB);
  }
}

TEST(MigInstances, ALayoutTheDriverRefusesIsAnErrorNamingIt) {
  // Two 4g instances: 4g.40gb has one placement (memory slice 0).
  const auto two = plan_mig_instances(gpu("H100-SXM5-80GB"), tenants({{"a", 0.5}, {"b", 0.5}}));
  ASSERT_FALSE(two.has_value());
  EXPECT_THAT(two.error().message(), HasSubstr("'a' 4g.40gb, 'b' 4g.40gb do not fit"));
  // 3g + 2g + 2g fits only with the 3g at memory slice 4 (no 2g starts at 6): found by
  // backtracking from 3g at 0. SMs follow the memory slices.
  const auto odd =
      plan_mig_instances(gpu("H100-SXM5-80GB"), tenants({{"a", 0.42}, {"b", 0.28}, {"c", 0.28}}));
  ASSERT_TRUE(odd.has_value()) << odd.error().message();
  EXPECT_EQ((*odd)[1].first_sm, 0);
  EXPECT_EQ((*odd)[2].first_sm, 32);
  EXPECT_EQ((*odd)[0].first_sm, 64);
  EXPECT_EQ((*odd)[0].sms, 60);
  // Eight tenants cannot have a slice each.
  const auto eight = plan_mig_instances(
      gpu("A100-SXM4-40GB"),
      tenants({{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}, {"e", 0}, {"f", 0}, {"g", 0}, {"h", 0}}));
  ASSERT_FALSE(eight.has_value());
  EXPECT_THAT(eight.error().message(), HasSubstr("8 tenants without an sm_share split the 7"));
  // A GPU without MIG.
  const auto rtx = plan_mig_instances(gpu("rtx4090"), tenants({{"a", 0}}));
  ASSERT_FALSE(rtx.has_value());
  EXPECT_THAT(rtx.error().message(), HasSubstr("mig"));
}

TEST(MigMode, PartitionsCarryTheirInstancesSmsBandwidthAndMemory) {
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, gpu("A100-SXM4-40GB")};
  MigMode mode;
  EXPECT_EQ(mode.name(), "mig");
  ASSERT_TRUE(mode.attach(dev, tenants({{"chat", 0.42}, {"train", 0}})));
  // 3 slices (3g.20gb: 42 SMs, 4 memory slices) and the 4 left as 4g.20gb (56 SMs, placed at 0,
  // so the 3g moves to 4).
  const auto parts = mode.partitions();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "chat (3g.20gb)");
  EXPECT_EQ(parts[0].sms, device::SmMask::range(56, 98));
  EXPECT_EQ(parts[0].memory_bytes, 20 * kGiB);
  EXPECT_EQ(parts[1].name, "train (4g.20gb)");
  EXPECT_EQ(parts[1].sms, device::SmMask::range(0, 56));
  EXPECT_THAT(dev.domain_shares(), ElementsAre(DoubleEq(0.5), DoubleEq(0.5)));
}

}  // namespace
}  // namespace tessera::gpu
