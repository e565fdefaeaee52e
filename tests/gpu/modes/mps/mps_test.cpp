#include "tessera/gpu/modes/mps/mps.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/mode_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

MpsOptions with_percentage(double pct) {
  MpsOptions o;
  o.active_thread_percentage = pct;
  return o;
}

TEST(Mps, SmCapRoundsUpToWholeSms) {
  EXPECT_EQ(MpsMode::sm_cap(100, 132), 0);  // no cap
  EXPECT_EQ(MpsMode::sm_cap(50, 132), 66);  // exact: no spurious round-up
  EXPECT_EQ(MpsMode::sm_cap(30, 16), 5);    // 4.8 -> 5
  EXPECT_EQ(MpsMode::sm_cap(10, 108), 11);  // 10.8 -> 11
  EXPECT_EQ(MpsMode::sm_cap(0.1, 16), 1);   // never below one SM
}

TEST(Mps, CapsEveryClientFromThePercentageAndSharesTheMask) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  MpsMode mode(with_percentage(30));
  ASSERT_TRUE(mode.attach(dev, tenants({{"a", 0}, {"b", 0}, {"c", 0}})));
  ASSERT_EQ(dev.stream_count(), 3u);
  for (device::StreamId s = 0; s < 3; ++s) {
    const auto& cfg = dev.stream_config(s);
    EXPECT_EQ(cfg.max_sms, 5);
    EXPECT_EQ(cfg.sms, dev.stream_config(0).sms);  // one shared SM set...
    EXPECT_TRUE(cfg.sms.empty());                  // ...which is every SM
    EXPECT_EQ(cfg.bandwidth_domain, device::kWholeDevice);
    EXPECT_EQ(cfg.context, s + 1);
  }
  EXPECT_TRUE(dev.domain_shares().empty());
  const auto parts = mode.partitions();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].sms.count(), 16);
  EXPECT_EQ(parts[0].tenants.size(), 3u);
}

TEST(Mps, ClientsRunAtTheSameTime) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  MpsMode mode(with_percentage(100));
  const auto ts = tenants({{"a", 0}, {"b", 0}});
  ASSERT_TRUE(mode.attach(dev, ts));
  EXPECT_EQ(dev.stream_config(0).max_sms, 0);
  ASSERT_TRUE(mode.submit(ts[0].id, test::sequence_of({1000}), 0, {}));
  ASSERT_TRUE(mode.submit(ts[1].id, test::sequence_of({1000}), 0, {}));
  exec.run_all();
  ASSERT_EQ(dev.runs().size(), 2u);
  EXPECT_EQ(dev.runs()[0].start, 0);
  EXPECT_EQ(dev.runs()[1].start, 0);  // no priority, no turns: both start at once
  EXPECT_TRUE(dev.calls_of(test::CallKind::kSuspend).empty());
}

TEST(Mps, PercentageBelow100NeedsSmLimit) {
  test::ManualExecutor exec;
  auto caps = test::all_capabilities();
  caps.sm_limit = false;
  test::FakeDevice dev(exec, test::fake_spec(), caps);
  MpsMode capped(with_percentage(50));
  const auto st = capped.attach(dev, tenants({{"a", 0}}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kUnsupported);
  EXPECT_THAT(st.error().message(), HasSubstr("sm_limit"));
  MpsMode uncapped(with_percentage(100));
  EXPECT_TRUE(uncapped.attach(dev, tenants({{"a", 0}})));
}

TEST(Mps, UnknownTenantIsAnError) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  MpsMode mode(with_percentage(100));
  ASSERT_TRUE(mode.attach(dev, tenants({{"a", 0}})));
  const auto st = mode.submit(3, test::sequence_of({1}), 0, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kNotFound);
}

}  // namespace
}  // namespace tessera::gpu
