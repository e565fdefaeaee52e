#include "tessera/gpu/modes/static_partitions/static_partitions.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/mode_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Fixture {
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, test::fake_spec(16, 2)};  // 8 TPCs of 2 SMs
  StaticPartitionsMode mode;
};

TEST(StaticPartitions, EvenSplitIsDisjointAndTpcAligned) {
  Fixture f;
  ASSERT_TRUE(f.mode.attach(f.dev, tenants({{"a", 0}, {"b", 0}, {"c", 0}})));
  // 8 TPCs / 3 = 2.67 -> 2 TPCs each; the 2 TPCs left over stay idle.
  const auto parts = f.mode.partitions();
  ASSERT_EQ(parts.size(), 3u);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].sms,
              device::SmMask::range(4 * static_cast<int>(i), 4 * static_cast<int>(i) + 4));
    for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(parts[i].sms.overlaps(parts[j].sms));
    EXPECT_EQ(parts[i].bandwidth_domain, i + 1);
    EXPECT_EQ(parts[i].tenants, std::vector<TenantId>{static_cast<TenantId>(10 + i)});
  }
  EXPECT_THAT(f.dev.domain_shares(), ElementsAre(DoubleEq(0.25), DoubleEq(0.25), DoubleEq(0.25)));
  for (device::StreamId s = 0; s < 3; ++s) {
    EXPECT_EQ(f.dev.stream_config(s).sms, parts[s].sms);
    EXPECT_EQ(f.dev.stream_config(s).bandwidth_domain, parts[s].bandwidth_domain);
  }
}

TEST(StaticPartitions, ExplicitSharesSizePartitionsAndZeroSharesSplitTheRest) {
  Fixture f;
  ASSERT_TRUE(f.mode.attach(f.dev, tenants({{"big", 0.5}, {"x", 0}, {"y", 0}})));
  // big: 4 TPCs; x, y: 0.25 of 8 TPCs = 2 TPCs each.
  const auto parts = f.mode.partitions();
  EXPECT_EQ(parts[0].sms, device::SmMask::range(0, 8));
  EXPECT_EQ(parts[1].sms, device::SmMask::range(8, 12));
  EXPECT_EQ(parts[2].sms, device::SmMask::range(12, 16));
  EXPECT_THAT(f.dev.domain_shares(), ElementsAre(DoubleEq(0.5), DoubleEq(0.25), DoubleEq(0.25)));
}

TEST(StaticPartitions, SharesRoundDownToWholeTpcs) {
  const auto spec = test::fake_spec(16, 2);
  const auto plans = plan_static_partitions(spec, tenants({{"a", 0.3}, {"b", 0.7}}));
  ASSERT_TRUE(plans);
  // 0.3 x 8 = 2.4 -> 2 TPCs (4 SMs); 0.7 x 8 = 5.6 -> 5 TPCs (10 SMs).
  ASSERT_EQ(plans->size(), 2u);
  EXPECT_EQ((*plans)[0].first_sm, 0);
  EXPECT_EQ((*plans)[0].sms, 4);
  EXPECT_EQ((*plans)[1].first_sm, 4);
  EXPECT_EQ((*plans)[1].sms, 10);
  EXPECT_DOUBLE_EQ((*plans)[1].bandwidth_share, 10.0 / 16.0);
  for (const auto& p : *plans) {
    EXPECT_EQ(p.first_sm % spec.sms_per_tpc, 0);
    EXPECT_EQ(p.sms % spec.sms_per_tpc, 0);
  }
}

TEST(StaticPartitions, DecimalSharesThatSumToOneFit) {
  const auto plans =
      plan_static_partitions(test::fake_spec(20, 2), tenants({{"a", 0.1}, {"b", 0.2}, {"c", 0.7}}));
  ASSERT_TRUE(plans) << plans.error().message();
  EXPECT_EQ((*plans)[0].sms + (*plans)[1].sms + (*plans)[2].sms, 20);
}

TEST(StaticPartitions, OverSubscriptionNamesTheTenant) {
  Fixture f;
  const auto st = f.mode.attach(f.dev, tenants({{"chat", 0.6}, {"train", 0.5}}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(st.error().message(), HasSubstr("tenant 'train' over-subscribes"));
  EXPECT_THAT(st.error().message(), HasSubstr("'chat' 0.6 + 'train' 0.5"));
  EXPECT_EQ(f.dev.stream_count(), 0u);
  EXPECT_TRUE(f.dev.domain_shares().empty());
}

TEST(StaticPartitions, PartitionSmallerThanATpcNamesTheTenant) {
  Fixture f;
  const auto st = f.mode.attach(f.dev, tenants({{"tiny", 0.1}, {"rest", 0}}));
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("tenant 'tiny' would get less than one TPC"));
  EXPECT_THAT(st.error().message(), HasSubstr("at least 0.1250"));
}

TEST(StaticPartitions, NothingLeftForAnEvenShareNamesTheTenant) {
  Fixture f;
  const auto st = f.mode.attach(f.dev, tenants({{"all", 1.0}, {"late", 0}}));
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("tenant 'late' would get less than one TPC"));
  EXPECT_THAT(st.error().message(), HasSubstr("even split"));
}

TEST(StaticPartitions, InvalidShareNamesTheTenant) {
  Fixture f;
  const auto st = f.mode.attach(f.dev, tenants({{"neg", -0.2}}));
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("tenant 'neg' has SM share -0.2"));
}

TEST(StaticPartitions, NeedsSmPartitions) {
  test::ManualExecutor exec;
  auto caps = test::all_capabilities();
  caps.sm_partitions = false;
  test::FakeDevice dev(exec, test::fake_spec(), caps);
  StaticPartitionsMode mode;
  const auto st = mode.attach(dev, tenants({{"a", 0}}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kUnsupported);
  EXPECT_THAT(st.error().message(), HasSubstr("lacks SM partitions"));
}

// A real GPU's green contexts split SMs, not bandwidth: the partitions still confine SMs, all in
// the whole-device domain, and the counters say the bandwidth is shared.
TEST(StaticPartitions, WithoutBandwidthDomainsConfinesSmsAndSharesBandwidth) {
  test::ManualExecutor exec;
  auto caps = test::all_capabilities();
  caps.bandwidth_partitions = false;
  test::FakeDevice dev(exec, test::fake_spec(), caps);
  StaticPartitionsMode mode;
  ASSERT_TRUE(mode.attach(dev, tenants({{"a", 0}, {"b", 0}})));
  const auto parts = mode.partitions();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_FALSE(parts[0].sms.empty());
  EXPECT_FALSE(parts[0].sms.overlaps(parts[1].sms));
  EXPECT_EQ(parts[0].bandwidth_domain, device::kWholeDevice);
  EXPECT_EQ(parts[1].bandwidth_domain, device::kWholeDevice);
  const auto counters = mode.counters();
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].name, "partitions sharing memory bandwidth");
}

TEST(StaticPartitions, TenantsRunInTheirOwnPartitions) {
  Fixture f;
  const auto ts = tenants({{"a", 0}, {"b", 0}});
  ASSERT_TRUE(f.mode.attach(f.dev, ts));
  ASSERT_TRUE(f.mode.submit(ts[1].id, test::sequence_of({100}), 7, {}));
  ASSERT_TRUE(f.mode.submit(ts[0].id, test::sequence_of({100}), 8, {}));
  EXPECT_FALSE(f.mode.submit(42, test::sequence_of({100}), 9, {}));
  f.exec.run_all();
  ASSERT_EQ(f.dev.runs().size(), 2u);
  const auto parts = f.mode.partitions();
  for (const auto& run : f.dev.runs()) {
    const auto& expected = parts[run.tag == 8 ? 0 : 1];
    EXPECT_EQ(run.config.sms, expected.sms);
    EXPECT_EQ(run.config.bandwidth_domain, expected.bandwidth_domain);
  }
}

}  // namespace
}  // namespace tessera::gpu
