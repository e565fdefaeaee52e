#include "tessera/gpu/modes/exclusive/exclusive.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/mode_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

TEST(ExclusiveMode, RejectsTwoTenantsNamingThem) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  ExclusiveMode mode;
  const auto ts = tenants({{"chat", 0}, {"train", 0}});
  const auto st = mode.attach(dev, ts);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(st.error().message(), HasSubstr("exactly one tenant"));
  EXPECT_THAT(st.error().message(), HasSubstr("'chat'"));
  EXPECT_THAT(st.error().message(), HasSubstr("'train'"));
  EXPECT_EQ(dev.stream_count(), 0u);
}

TEST(ExclusiveMode, RejectsNoTenants) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  ExclusiveMode mode;
  const auto st = mode.attach(dev, {});
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("no tenants"));
}

TEST(ExclusiveMode, GivesTheTenantTheWholeGpu) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec(16));
  ExclusiveMode mode;
  const auto ts = tenants({{"chat", 0}});
  ASSERT_TRUE(mode.attach(dev, ts));
  ASSERT_EQ(dev.stream_count(), 1u);
  const auto& cfg = dev.stream_config(0);
  EXPECT_TRUE(cfg.sms.empty());  // all SMs
  EXPECT_EQ(cfg.max_sms, 0);
  EXPECT_EQ(cfg.bandwidth_domain, device::kWholeDevice);

  const auto parts = mode.partitions();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].sms.count(), 16);
  EXPECT_EQ(parts[0].tenants, std::vector<TenantId>{ts[0].id});
}

TEST(ExclusiveMode, RunsSubmissionsInOrderAndRejectsUnknownTenants) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  ExclusiveMode mode;
  const auto ts = tenants({{"chat", 0}});
  ASSERT_TRUE(mode.attach(dev, ts));
  Completions c;
  ASSERT_TRUE(mode.submit(ts[0].id, test::sequence_of({100, 200}), 1, c.callback()));
  ASSERT_TRUE(mode.submit(ts[0].id, test::sequence_of({50}), 2, c.callback()));
  const auto bad = mode.submit(ts[0].id + 1, test::sequence_of({50}), 3, c.callback());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), core::Code::kNotFound);
  EXPECT_THAT(bad.error().message(), HasSubstr("no tenant with id 11"));
  exec.run_all();
  using P = std::pair<std::uint64_t, core::Nanos>;
  EXPECT_EQ(c.done, (std::vector<P>{{1, 300}, {2, 350}}));
}

TEST(ExclusiveMode, SubmitBeforeAttachAndSecondAttachFail) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  ExclusiveMode mode;
  const auto early = mode.submit(10, test::sequence_of({1}), 0, {});
  ASSERT_FALSE(early);
  EXPECT_THAT(early.error().message(), HasSubstr("before attach"));
  const auto ts = tenants({{"chat", 0}});
  ASSERT_TRUE(mode.attach(dev, ts));
  const auto again = mode.attach(dev, ts);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().message(), HasSubstr("already attached"));
}

}  // namespace
}  // namespace tessera::gpu
