#include "tessera/gpu/modes/time_slicing/time_slicing.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "gpu/mode_test_util.hpp"

namespace tessera::gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Slice = std::tuple<device::ContextId, core::Nanos, core::Nanos>;  // context, start, end

// The fake runs a kernel of F FLOPs for F ns; slices of 1000 ns, switches of 100 ns.
TimeSlicingOptions options() {
  TimeSlicingOptions o;
  o.time_slice = 1000;
  o.context_switch = 100;
  return o;
}

std::vector<Slice> runs_of(const test::FakeDevice& dev) {
  std::vector<Slice> out;
  for (const auto& r : dev.runs()) out.emplace_back(r.context, r.start, r.end);
  return out;
}

// Suspend (-ctx) and resume (+ctx) calls after attach, with their times.
std::vector<std::pair<int, core::Nanos>> switches_of(const test::FakeDevice& dev) {
  std::vector<std::pair<int, core::Nanos>> out;
  for (const auto& c : dev.calls()) {
    if (c.kind == test::CallKind::kSuspend) out.emplace_back(-static_cast<int>(c.context), c.at);
    if (c.kind == test::CallKind::kResume) out.emplace_back(static_cast<int>(c.context), c.at);
  }
  return out;
}

struct Fixture {
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, test::fake_spec()};
  TimeSlicingMode mode{options()};
  std::vector<TenantInfo> ts = tenants({{"a", 0}, {"b", 0}});
  Completions c;
  Fixture() { EXPECT_TRUE(mode.attach(dev, ts)); }
};

TEST(TimeSlicing, EachContextOwnsAllSmsAndStartsSuspended) {
  Fixture f;
  ASSERT_EQ(f.dev.stream_count(), 2u);
  EXPECT_EQ(f.dev.stream_config(0).context, 1u);
  EXPECT_EQ(f.dev.stream_config(1).context, 2u);
  for (device::StreamId s = 0; s < 2; ++s) {
    EXPECT_TRUE(f.dev.stream_config(s).sms.empty());
    EXPECT_EQ(f.dev.stream_config(s).max_sms, 0);
  }
  EXPECT_THAT(switches_of(f.dev), ElementsAre(std::pair{-1, 0}, std::pair{-2, 0}));
  const auto parts = f.mode.partitions();
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].tenants, (std::vector<TenantId>{10, 11}));
}

TEST(TimeSlicing, AlternatesContextsBySliceAndPaysTheSwitch) {
  Fixture f;
  ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({5000}), 1, f.c.callback()));
  ASSERT_TRUE(f.mode.submit(f.ts[1].id, test::sequence_of({5000}), 2, f.c.callback()));
  f.exec.run_all();
  // a runs first (loading an idle GPU is free), then slices of 1000 alternate with 100 ns gaps
  // in which nothing runs; after a finishes, b is alone and runs to its end.
  EXPECT_THAT(runs_of(f.dev),
              ElementsAre(Slice{1, 0, 1000}, Slice{2, 1100, 2100}, Slice{1, 2200, 3200},
                          Slice{2, 3300, 4300}, Slice{1, 4400, 5400}, Slice{2, 5500, 6500},
                          Slice{1, 6600, 7600}, Slice{2, 7700, 8700}, Slice{1, 8800, 9800},
                          Slice{2, 9900, 10900}));
  using P = std::pair<std::uint64_t, core::Nanos>;
  EXPECT_EQ(f.c.done, (std::vector<P>{{1, 9800}, {2, 10900}}));
  EXPECT_EQ(f.mode.context_switches(), 9);
}

TEST(TimeSlicing, SuspendsAndResumesExactly) {
  Fixture f;
  ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({1500}), 1, f.c.callback()));
  ASSERT_TRUE(f.mode.submit(f.ts[1].id, test::sequence_of({1500}), 2, f.c.callback()));
  f.exec.run_all();
  // attach; load a; slice end at 1000; b in at 1100; b's slice ends at 2100 with a waiting;
  // a finishes at 2700 and gives up the GPU at once; b finishes at 3300 and keeps the GPU.
  EXPECT_THAT(switches_of(f.dev),
              ElementsAre(std::pair{-1, 0}, std::pair{-2, 0}, std::pair{1, 0}, std::pair{-1, 1000},
                          std::pair{2, 1100}, std::pair{-2, 2100}, std::pair{1, 2200},
                          std::pair{-1, 2700}, std::pair{2, 2800}));
  EXPECT_THAT(runs_of(f.dev), ElementsAre(Slice{1, 0, 1000}, Slice{2, 1100, 2100},
                                          Slice{1, 2200, 2700}, Slice{2, 2800, 3300}));
}

TEST(TimeSlicing, ContextAloneKeepsTheGpuWithoutSwitching) {
  Fixture f;
  ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({4000, 3000}), 1, f.c.callback()));
  f.exec.run_all();
  EXPECT_THAT(runs_of(f.dev), ElementsAre(Slice{1, 0, 4000}, Slice{1, 4000, 7000}));
  EXPECT_EQ(f.mode.context_switches(), 0);
  // Only attach's suspensions and the first load.
  EXPECT_THAT(switches_of(f.dev), ElementsAre(std::pair{-1, 0}, std::pair{-2, 0}, std::pair{1, 0}));
}

TEST(TimeSlicing, IdleContextGivesUpTheGpuAtOnce) {
  Fixture f;
  ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({500}), 1, f.c.callback()));
  ASSERT_TRUE(f.mode.submit(f.ts[1].id, test::sequence_of({3000}), 2, f.c.callback()));
  f.exec.run_all();
  // a is done at 500, well inside its slice; b takes over after one switch and, with a idle,
  // runs 3000 ns without a preemption.
  EXPECT_THAT(runs_of(f.dev), ElementsAre(Slice{1, 0, 500}, Slice{2, 600, 3600}));
  EXPECT_EQ(f.mode.context_switches(), 1);
}

TEST(TimeSlicing, LateCompetitorWaitsForTheNextSliceBoundary) {
  Fixture f;
  ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({10000}), 1, f.c.callback()));
  f.exec.run_until(2500);
  ASSERT_TRUE(f.mode.submit(f.ts[1].id, test::sequence_of({500}), 2, f.c.callback()));
  f.exec.run_all();
  EXPECT_THAT(runs_of(f.dev),
              ElementsAre(Slice{1, 0, 3000}, Slice{2, 3100, 3600}, Slice{1, 3700, 10700}));
}

TEST(TimeSlicing, ResubmittingFromTheCallbackKeepsTheSlice) {
  Fixture f;
  int resubmits = 1;
  std::function<void(const device::SubmissionDone&)> again = [&](const device::SubmissionDone&) {
    if (resubmits-- > 0) {
      ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({600}), 3, again));
    }
  };
  ASSERT_TRUE(f.mode.submit(f.ts[0].id, test::sequence_of({600}), 1, again));
  ASSERT_TRUE(f.mode.submit(f.ts[1].id, test::sequence_of({300}), 2, f.c.callback()));
  f.exec.run_all();
  // a's second submission, made as its first finished at 600, still belongs to a's slice.
  EXPECT_THAT(runs_of(f.dev), ElementsAre(Slice{1, 0, 600}, Slice{1, 600, 1000},
                                          Slice{2, 1100, 1400}, Slice{1, 1500, 1700}));
}

TEST(TimeSlicing, ThreeTenantsTakeTurnsRoundRobin) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  TimeSlicingMode mode(options());
  const auto ts = tenants({{"a", 0}, {"b", 0}, {"c", 0}});
  ASSERT_TRUE(mode.attach(dev, ts));
  for (const auto& t : ts) ASSERT_TRUE(mode.submit(t.id, test::sequence_of({2000}), 0, {}));
  exec.run_all();
  std::vector<device::ContextId> order;
  for (const auto& r : dev.runs()) order.push_back(r.context);
  EXPECT_THAT(order, ElementsAre(1, 2, 3, 1, 2, 3));
}

TEST(TimeSlicing, NeedsContextPreemption) {
  test::ManualExecutor exec;
  auto caps = test::all_capabilities();
  caps.context_preemption = false;
  test::FakeDevice dev(exec, test::fake_spec(), caps);
  TimeSlicingMode mode(options());
  const auto st = mode.attach(dev, tenants({{"a", 0}}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), core::Code::kUnsupported);
  EXPECT_THAT(st.error().message(), HasSubstr("suspend and resume"));
  EXPECT_THAT(st.error().message(), HasSubstr("fake-gpu"));
}

TEST(TimeSlicing, UnknownTenantIsAnError) {
  Fixture f;
  const auto st = f.mode.submit(99, test::sequence_of({1}), 0, {});
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("no tenant with id 99"));
  EXPECT_THAT(st.error().message(), HasSubstr("'a' (10), 'b' (11)"));
}

TEST(TimeSlicing, DestroyingTheModeCancelsItsTimers) {
  test::ManualExecutor exec;
  test::FakeDevice dev(exec, test::fake_spec());
  const auto ts = tenants({{"a", 0}, {"b", 0}});
  {
    TimeSlicingMode mode(options());
    ASSERT_TRUE(mode.attach(dev, ts));
    ASSERT_TRUE(mode.submit(ts[0].id, test::sequence_of({5000}), 0, {}));
    ASSERT_TRUE(mode.submit(ts[1].id, test::sequence_of({5000}), 0, {}));
    EXPECT_EQ(exec.pending(), 2u);  // a's kernel and the slice timer
  }
  EXPECT_EQ(exec.pending(), 1u);  // only the device's own event is left
}

}  // namespace
}  // namespace tessera::gpu
