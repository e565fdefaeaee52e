#include "tessera/gpu/policy/remap_policy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"

namespace tessera::gpu {
namespace {

using ::testing::ElementsAre;
using workload::Phase;

// H100's green-context grid: 128 usable SMs in steps of 8, at least 8.
PartitionGrid h100_grid() {
  return PartitionGrid{.granularity = 8, .min_sms = 8, .usable_sms = 128, .device_sms = 132};
}

TenantSnapshot lc(TenantId id, Phase next, int sms = 0) {
  return TenantSnapshot{.id = id,
                        .latency_critical = true,
                        .ttft_slo = core::millis(400),
                        .tpot_slo = core::millis(40),
                        .has_work = next != Phase::kUnspecified,
                        .next_phase = next,
                        .sms = sms};
}

TenantSnapshot training(TenantId id, int sms = 0) {
  return TenantSnapshot{.id = id, .has_work = true, .next_phase = Phase::kTraining, .sms = sms};
}

RemapSnapshot snap(std::vector<TenantSnapshot> tenants, core::Nanos now = core::seconds(1)) {
  return RemapSnapshot{.now = now,
                       .grid = h100_grid(),
                       .min_residency = core::millis(2),
                       .tenants = std::move(tenants)};
}

TEST(SloDemand, ScalesTheLastStepToHalfTheSlo) {
  auto chat = lc(1, Phase::kDecode);
  chat.decode = {.latency = core::millis(10), .sms = 64};
  const auto s = snap({chat});
  // 10 ms on 64 SMs; the goal is half of a 40 ms TPOT, 20 ms: 32 SMs if latency ~ 1/SMs.
  EXPECT_EQ(slo_demand(s, chat, Phase::kDecode), 32);
  chat.decode.latency = core::millis(11);  // 35.2 SMs: rounded up to the grid
  EXPECT_EQ(slo_demand(s, chat, Phase::kDecode), 40);
  // Unseen phase, or no target: every usable SM.
  EXPECT_EQ(slo_demand(s, chat, Phase::kPrefill), 128);
  chat.tpot_slo = 0;
  EXPECT_EQ(slo_demand(s, chat, Phase::kDecode), 128);
}

TEST(CoGpuPolicy, GivesInferenceWhatItsSloNeedsAndTrainingTheRest) {
  auto chat = lc(1, Phase::kDecode, 64);
  chat.decode = {.latency = core::millis(10), .sms = 64};
  const auto t = CoGpuPolicy().decide(snap({chat, training(2, 64)}));
  EXPECT_THAT(t.sms, ElementsAre(32, 96));
}

TEST(CoGpuPolicy, PrefillGetsEverySmEvenWithTtftSlackButDecodeIsSized) {
  auto chat = lc(1, Phase::kPrefill, 32);
  chat.prefill = {.latency = core::millis(20), .sms = 32};  // far inside its 200 ms budget
  chat.decode = {.latency = core::millis(10), .sms = 64};
  EXPECT_THAT(CoGpuPolicy().decide(snap({chat, training(2, 96)})).sms, ElementsAre(120, 8));
  chat.next_phase = Phase::kDecode;
  EXPECT_THAT(CoGpuPolicy().decide(snap({chat, training(2, 96)})).sms, ElementsAre(32, 96));
}

TEST(CoGpuPolicy, UnseenInferenceGetsAllButTrainingsFloor) {
  const auto t = CoGpuPolicy().decide(snap({lc(1, Phase::kPrefill, 64), training(2, 64)}));
  EXPECT_THAT(t.sms, ElementsAre(120, 8));
}

TEST(CoGpuPolicy, IdleInferenceGivesEverythingToBestEffortAfterItsResidency) {
  auto chat = lc(1, Phase::kUnspecified, 64);
  chat.last_change = core::seconds(1) - core::millis(5);
  EXPECT_THAT(CoGpuPolicy().decide(snap({chat, training(2, 64)})).sms, ElementsAre(0, 128));
  // Changed 1 ms ago: it keeps its SMs for now (a short gap between requests is no reason to
  // move twice).
  chat.last_change = core::seconds(1) - core::millis(1);
  EXPECT_THAT(CoGpuPolicy().decide(snap({chat, training(2, 64)})).sms, ElementsAre(64, 64));
}

TEST(CoGpuPolicy, NothingToRunKeepsThePartitions) {
  auto idle_train = training(2, 48);
  idle_train.has_work = false;
  EXPECT_THAT(CoGpuPolicy().decide(snap({lc(1, Phase::kUnspecified, 80), idle_train})).sms,
              ElementsAre(80, 48));
}

TEST(CoGpuPolicy, HigherPriorityInferenceIsServedFirst) {
  auto low = lc(1, Phase::kPrefill);
  auto high = lc(2, Phase::kPrefill);
  high.priority = 5;
  const auto t = CoGpuPolicy().decide(snap({low, high}));
  EXPECT_THAT(t.sms, ElementsAre(8, 120));  // the lower priority keeps a minimum partition
}

// A burst: tenant 1 has a prefill that wants the whole GPU while tenant 2 is decoding.
RemapSnapshot prefill_burst() {
  auto burst = lc(1, Phase::kPrefill);
  auto chat = lc(2, Phase::kDecode);
  chat.decoding = true;
  chat.decode = {.latency = core::millis(15), .sms = 64};  // needs 48 SMs for a 20 ms step
  return snap({burst, chat, training(3)});
}

TEST(TpotFirstPolicy, GivesDecodeMoreThanCoGpuUnderAPrefillBurst) {
  const auto s = prefill_burst();
  const auto cogpu = CoGpuPolicy().decide(s);
  const auto tpot = TpotFirstPolicy().decide(s);
  // cogpu scales both inference demands down together; tpot-first reserves the GPU for the
  // decoding tenant first and leaves the new prefill its minimum.
  ASSERT_THAT(cogpu.sms, ElementsAre(88, 32, 8));
  ASSERT_THAT(tpot.sms, ElementsAre(8, 112, 8));
  EXPECT_GT(tpot.sms[1], cogpu.sms[1]);
  EXPECT_LT(tpot.sms[0], cogpu.sms[0]);  // the cost: the prefill's share (TTFT)
}

TEST(TpotFirstPolicy, ANewPrefillGetsOnlyItsTtftShareWhileDecodingGetsEverything) {
  auto chat = lc(1, Phase::kPrefill, 64);
  chat.prefill = {.latency = core::millis(100), .sms = 64};  // 200 ms budget: 32 SMs
  const auto idle_start = snap({chat, training(2, 64)});
  EXPECT_THAT(TpotFirstPolicy().decide(idle_start).sms, ElementsAre(32, 96));
  EXPECT_THAT(CoGpuPolicy().decide(idle_start).sms, ElementsAre(120, 8));
  chat.decoding = true;  // the same prefill joining running requests
  EXPECT_THAT(TpotFirstPolicy().decide(snap({chat, training(2, 64)})).sms, ElementsAre(120, 8));
}

// Both policies, on many mixed snapshots: sizes on the grid, within the device, and the same
// answer for the same snapshot.
TEST(RemapPolicies, AlwaysFitTheGridAndAreDeterministic) {
  std::mt19937 rng(7);
  const CoGpuPolicy cogpu;
  const TpotFirstPolicy tpot;
  const std::vector<const RemapPolicy*> policies = {&cogpu, &tpot};
  const Phase phases[] = {Phase::kUnspecified, Phase::kPrefill, Phase::kDecode};
  for (int round = 0; round < 500; ++round) {
    std::vector<TenantSnapshot> ts;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) {
      auto t = rng() % 3 == 0 ? training(k) : lc(k, phases[rng() % 3]);
      t.has_work = t.has_work && rng() % 4 != 0;
      t.priority = static_cast<int>(rng() % 3);
      t.decoding = rng() % 2 == 0;
      t.decode = {.latency = core::micros(static_cast<double>(rng() % 40000)),
                  .sms = static_cast<int>(rng() % 129)};
      t.prefill = {.latency = core::micros(static_cast<double>(rng() % 400000)),
                   .sms = static_cast<int>(rng() % 129)};
      t.last_change = core::seconds(1) - core::micros(static_cast<double>(rng() % 4000));
      ts.push_back(t);
    }
    const auto s = snap(ts);
    for (const auto* p : policies) {
      const auto t = p->decide(s);
      ASSERT_EQ(t.sms.size(), ts.size()) << p->name();
      EXPECT_LE(std::accumulate(t.sms.begin(), t.sms.end(), 0), 128) << p->name();
      for (const int sms : t.sms) EXPECT_EQ(s.grid.round(sms), sms) << p->name();
      for (std::size_t k = 0; k < ts.size(); ++k) {
        if (!ts[k].latency_critical && ts[k].has_work) {
          EXPECT_GE(t.sms[k], 8) << p->name() << ": best-effort keeps its floor";
        }
      }
      EXPECT_EQ(p->decide(s).sms, t.sms) << p->name();
    }
  }
}

}  // namespace
}  // namespace tessera::gpu
