// The TPC scheduler as a pure policy: ownership by priority, owners first on their own TPCs,
// stealing of idle TPCs guided by the per-TPC timers, atoms on borrowed TPCs, and deterministic
// tie-breaking.

#include "tessera/gpu/policy/tpc_scheduler.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "gpu/policy/tpc_test_util.hpp"

namespace tessera::gpu {
namespace {

using test::tpc_gpu;
using test::tpc_kernel;

// Every wave of a known kernel takes the same time, whatever the TPC count.
class WavePredictor final : public LatencyPredictor {
 public:
  void set(const workload::Kernel& k, core::Nanos per_wave) { per_wave_[&k] = per_wave; }
  std::optional<core::Nanos> predict(const workload::Kernel& k, std::int64_t blocks,
                                     int tpcs) const override {
    const auto it = per_wave_.find(&k);
    if (it == per_wave_.end()) return std::nullopt;
    const std::int64_t wave = wave_blocks(tpc_gpu(), k, tpcs);
    return it->second * ((blocks + wave - 1) / wave);
  }

 private:
  std::map<const workload::Kernel*, core::Nanos> per_wave_;
};

constexpr core::Nanos kNow = core::millis(5);
constexpr core::Nanos kAtom = core::micros(250);

TenantInfo critical(const char* name) {
  return TenantInfo{.id = 0, .name = name, .latency_critical = true, .priority = 1};
}
TenantInfo best_effort(const char* name, int priority = 0) {
  return TenantInfo{.id = 0, .name = name, .latency_critical = false, .priority = priority};
}

TpcScheduler make(std::vector<TenantInfo> infos) {
  for (std::size_t i = 0; i < infos.size(); ++i) infos[i].id = static_cast<TenantId>(10 + i);
  auto s = TpcScheduler::make(tpc_gpu(), infos, kAtom);
  EXPECT_TRUE(s) << s.error().message();
  return std::move(s.value());
}

// Pieces in flight, launched in order on the 8-TPC GPU: TPCs [first, end) run `tenant`'s piece.
struct Run {
  int first;
  int end;
  std::size_t tenant;
  core::Nanos until;
};
using Runs = std::vector<Run>;
Runs free_tpcs() {
  return {};
}
void run_on(Runs& runs, int first, int end, std::size_t tenant, core::Nanos until) {
  runs.push_back({first, end, tenant, until});
}
TenantState ready(const workload::Kernel& k, int need = 0) {
  return {.has_work = true, .ready = &k, .next_block = 0, .tpc_need = need};
}
TenantState in_flight() {
  return {.has_work = true, .ready = nullptr, .next_block = 0, .tpc_need = 0};
}
TenantState idle() {
  return {};
}
TpcSet tpc_range(int first, int end) {
  TpcSet s;
  for (int j = first; j < end; ++j) s.set(static_cast<std::size_t>(j));
  return s;
}

std::vector<TpcLaunch> decide(TpcScheduler& s, const Runs& runs,
                              const std::vector<TenantState>& tenants, const WavePredictor& p) {
  TpcBoard board(8, tenants.size());
  for (const auto& r : runs) board.launch(r.tenant, tpc_range(r.first, r.end), r.until);
  std::vector<TpcLaunch> out;
  s.decide(board, tenants, kNow, p, out);
  return out;
}

TEST(AllocateTpcs, LatencyCriticalTenantsOwnEverythingSplitEvenly) {
  const std::vector<TenantInfo> one{critical("chat"), best_effort("train")};
  EXPECT_EQ(*allocate_tpcs(tpc_gpu(), one), std::vector<int>(8, 0));

  const std::vector<TenantInfo> three{critical("a"), best_effort("x"), critical("b"),
                                      critical("c")};
  EXPECT_EQ(*allocate_tpcs(tpc_gpu(), three), (std::vector<int>{0, 0, 0, 2, 2, 2, 3, 3}));
}

TEST(AllocateTpcs, WithoutLatencyCriticalTenantsTheTopPriorityOwns) {
  const std::vector<TenantInfo> equal{best_effort("a"), best_effort("b")};
  EXPECT_EQ(*allocate_tpcs(tpc_gpu(), equal), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  const std::vector<TenantInfo> ranked{best_effort("a", 0), best_effort("b", 2)};
  EXPECT_EQ(*allocate_tpcs(tpc_gpu(), ranked), std::vector<int>(8, 1));
}

TEST(AllocateTpcs, SharesOwnTheirFractionAndLeaveTheRestUnowned) {
  std::vector<TenantInfo> infos{critical("a"), best_effort("b"), best_effort("c")};
  infos[0].sm_share = 0.5;
  infos[1].sm_share = 0.25;
  EXPECT_EQ(*allocate_tpcs(tpc_gpu(), infos),
            (std::vector<int>{0, 0, 0, 0, 1, 1, kNoTenant, kNoTenant}));
}

TEST(AllocateTpcs, RejectsSharesThatDoNotFit) {
  std::vector<TenantInfo> infos{critical("a"), best_effort("b")};
  infos[0].sm_share = 0.75;
  infos[1].sm_share = 0.5;
  auto r = allocate_tpcs(tpc_gpu(), infos);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("over-subscribes"), std::string::npos);

  infos[1].sm_share = 0.05;  // less than one of 8 TPCs
  r = allocate_tpcs(tpc_gpu(), infos);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("'b'"), std::string::npos);
  EXPECT_NE(r.error().message().find("at least 0.1250"), std::string::npos);

  infos[1].sm_share = -1;
  EXPECT_FALSE(allocate_tpcs(tpc_gpu(), infos));
}

TEST(TpcScheduler, RejectsANonPositiveAtomTarget) {
  const std::vector<TenantInfo> infos{critical("a")};
  const auto s = TpcScheduler::make(tpc_gpu(), infos, 0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("atom duration"), std::string::npos);
}

TEST(TpcScheduler, SmsOfMapsTpcsToTheirSms) {
  TpcSet s;
  s.set(1);
  s.set(3);
  const auto mask = sms_of(tpc_gpu(), s);
  EXPECT_EQ(mask.count(), 4);
  for (int sm : {2, 3, 6, 7}) EXPECT_TRUE(mask.test(sm)) << sm;
}

TEST(TpcScheduler, OwnerAloneRunsWholeKernelsOnItsOwnTpcs) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto k = tpc_kernel(640);
  WavePredictor p;
  p.set(k, core::micros(100));
  const auto out = decide(s, free_tpcs(), {ready(k), idle()}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tenant, 0u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 8));
  EXPECT_EQ(out[0].borrowed, 0);
  EXPECT_EQ(out[0].reclaimed, 0);
  EXPECT_EQ(out[0].atom.reason, AtomReason::kOwnTpcs);
  EXPECT_EQ(out[0].atom.range, (device::BlockRange{.begin = 0, .end = 640}));
}

TEST(TpcScheduler, BestEffortAloneBorrowsTheWholeGpuInAtoms) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto k = tpc_kernel(640);  // 10 waves of 64 blocks on 8 TPCs
  WavePredictor p;
  p.set(k, core::micros(100));
  const auto out = decide(s, free_tpcs(), {idle(), ready(k)}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tenant, 1u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 8));
  EXPECT_EQ(out[0].borrowed, 8);
  EXPECT_EQ(out[0].atom.reason, AtomReason::kSplit);
  EXPECT_EQ(out[0].atom.range, (device::BlockRange{.begin = 0, .end = 128}));
  ASSERT_TRUE(out[0].atom.predicted);
  EXPECT_LE(*out[0].atom.predicted, kAtom);
}

TEST(TpcScheduler, OwnerTakesBackTpcsRunningABorrowedAtom) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto k = tpc_kernel(64);
  WavePredictor p;
  p.set(k, core::micros(100));
  auto tpcs = free_tpcs();
  run_on(tpcs, 0, 8, 1, kNow + core::micros(200));
  const auto out = decide(s, tpcs, {ready(k), in_flight()}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tenant, 0u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 8));
  EXPECT_EQ(out[0].reclaimed, 8);
  EXPECT_EQ(out[0].borrowed, 0);
}

TEST(TpcScheduler, UnownedTpcsGoByPriority) {
  std::vector<TenantInfo> infos{critical("chat"), best_effort("a"), best_effort("b")};
  infos[0].sm_share = 0.5;  // chat owns TPCs 0-3; 4-7 are unowned
  auto s = make(infos);
  const auto k = tpc_kernel(4800);
  WavePredictor p;
  p.set(k, core::micros(100));
  auto tpcs = free_tpcs();
  run_on(tpcs, 4, 8, 1, kNow + core::micros(200));
  // Of equal importance, b does not take them from a.
  EXPECT_TRUE(decide(s, tpcs, {in_flight(), in_flight(), ready(k)}, p).empty());
  // chat does: its own four plus the unowned four, all taken back from a's atom.
  const auto out = decide(s, tpcs, {ready(k), in_flight(), ready(k)}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tenant, 0u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 8));
  EXPECT_EQ(out[0].borrowed, 4);
  EXPECT_EQ(out[0].reclaimed, 4);
  EXPECT_EQ(out[0].atom.reason, AtomReason::kSplit);
}

TEST(TpcScheduler, RightSizedOwnerTakesFreeTpcsFirstThenThoseEndingSoonest) {
  auto s = make({critical("chat"), best_effort("a"), best_effort("b"), best_effort("c")});
  const auto k = tpc_kernel(16);
  WavePredictor p;
  p.set(k, core::micros(100));
  auto tpcs = free_tpcs();
  run_on(tpcs, 0, 2, 1, kNow + core::micros(200));
  run_on(tpcs, 2, 4, 2, kNow + core::micros(50));
  run_on(tpcs, 4, 7, 3, kNow + core::micros(300));
  // Only TPC 7 is free: the owner, right-sized to 3, reclaims TPCs 2 and 3 (b's atom ends first).
  const auto out = decide(s, tpcs, {ready(k, 3), in_flight(), in_flight(), in_flight()}, p);
  ASSERT_EQ(out.size(), 1u);
  TpcSet want = tpc_range(2, 4);
  want.set(7);
  EXPECT_EQ(out[0].tpcs, want);
  EXPECT_EQ(out[0].reclaimed, 2);
}

TEST(TpcScheduler, LendsIdleTpcsOnlyForAtomsThatEndBeforeTheOwnerNeedsThem) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto k = tpc_kernel(480);
  WavePredictor p;
  p.set(k, core::micros(150));  // one wave: 150 us, so an atom is one wave (target 250 us)
  for (const auto& [owner_end, lends] :
       {std::pair{core::micros(100), false}, std::pair{core::millis(1), true}}) {
    auto tpcs = free_tpcs();
    run_on(tpcs, 0, 2, 0, kNow + owner_end);  // the owner's right-sized piece on TPCs 0-1
    const auto out = decide(s, tpcs, {in_flight(), ready(k)}, p);
    if (!lends) {
      EXPECT_TRUE(out.empty()) << "owner busy for " << owner_end;
      continue;
    }
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].tpcs, tpc_range(2, 8));
    EXPECT_EQ(out[0].borrowed, 6);
    ASSERT_TRUE(out[0].atom.predicted);
    EXPECT_LE(kNow + *out[0].atom.predicted, kNow + owner_end);
  }
}

TEST(TpcScheduler, CutsTheAtomToEndBeforeTheOwnerNeedsItsTpcs) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto k = tpc_kernel(4800);
  WavePredictor p;
  p.set(k, core::micros(30));  // a full atom would be 8 waves, 240 us
  auto tpcs = free_tpcs();
  run_on(tpcs, 0, 2, 0, kNow + core::micros(100));
  const auto out = decide(s, tpcs, {in_flight(), ready(k)}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tpcs, tpc_range(2, 8));
  // Three waves of 48 blocks on 6 TPCs: 90 us, done before the owner's piece ends.
  EXPECT_EQ(out[0].atom.range, (device::BlockRange{.begin = 0, .end = 3 * 48}));
  ASSERT_TRUE(out[0].atom.predicted);
  EXPECT_LE(*out[0].atom.predicted, core::micros(100));
}

TEST(TpcScheduler, LendsNothingOfAnOwnerWhosePieceHasNoPrediction) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto k = tpc_kernel(480);
  WavePredictor p;
  p.set(k, core::micros(10));
  auto tpcs = free_tpcs();
  run_on(tpcs, 0, 2, 0, kUnknownEnd);
  EXPECT_TRUE(decide(s, tpcs, {in_flight(), ready(k)}, p).empty());
}

TEST(TpcScheduler, DropsTpcsWhoseOwnerNeedsThemAndKeepsThoseOfIdleOwners) {
  auto s = make({critical("a"), critical("b"), best_effort("train")});  // a: 0-3, b: 4-7
  const auto k = tpc_kernel(4800);
  WavePredictor p;
  p.set(k, core::micros(150));
  auto tpcs = free_tpcs();
  run_on(tpcs, 4, 6, 1, kNow + core::micros(100));  // b busy briefly; its 6-7 idle
  const auto out = decide(s, tpcs, {idle(), in_flight(), ready(k)}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tenant, 2u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 4));
  EXPECT_EQ(out[0].borrowed, 4);
  EXPECT_EQ(out[0].atom.range.size(), wave_blocks(tpc_gpu(), k, 4));
}

TEST(TpcScheduler, BorrowsFromIdleOwnersThenFromOwnersNeedingTheirsLatest) {
  // a owns TPCs 0-2, b 3-5, c 6-7; a and b each run a piece on one TPC, c is idle.
  auto s = make({critical("a"), critical("b"), critical("c"), best_effort("train")});
  const auto k = tpc_kernel(4800);
  WavePredictor p;
  p.set(k, core::micros(20));
  const std::vector<TenantState> tenants{in_flight(), in_flight(), idle(), ready(k, 4)};
  auto tpcs = free_tpcs();
  run_on(tpcs, 0, 1, 0, kNow + core::millis(1));
  run_on(tpcs, 3, 4, 1, kNow + core::millis(2));
  // c's two, then b's (needed back later than a's).
  auto out = decide(s, tpcs, tenants, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tpcs, tpc_range(4, 8));
  EXPECT_EQ(out[0].borrowed, 4);
  // Equal deadlines: the lowest TPCs first.
  tpcs = free_tpcs();
  run_on(tpcs, 0, 1, 0, kNow + core::millis(2));
  run_on(tpcs, 3, 4, 1, kNow + core::millis(2));
  out = decide(s, tpcs, tenants, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tpcs, tpc_range(1, 3) | tpc_range(6, 8));
}

TEST(TpcScheduler, RightSizingLeavesTheRestToLendWhileTheOwnerRuns) {
  auto s = make({critical("chat"), best_effort("train")});
  const auto hp = tpc_kernel(16);  // one wave on 2 TPCs
  const auto be = tpc_kernel(4800);
  WavePredictor p;
  p.set(hp, core::millis(1));
  p.set(be, core::micros(150));
  const auto out = decide(s, free_tpcs(), {ready(hp, 2), ready(be)}, p);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tenant, 0u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 2));
  EXPECT_EQ(out[0].atom.reason, AtomReason::kOwnTpcs);
  EXPECT_EQ(out[1].tenant, 1u);
  EXPECT_EQ(out[1].tpcs, tpc_range(2, 8));
  EXPECT_EQ(out[1].borrowed, 6);
  EXPECT_TRUE((out[0].tpcs & out[1].tpcs).none());
}

TEST(TpcScheduler, BorrowersGoInPriorityOrderThenAttachOrder) {
  const auto k = tpc_kernel(4800);
  WavePredictor p;
  p.set(k, core::micros(100));
  {
    auto s = make({critical("chat"), best_effort("low", 0), best_effort("high", 2)});
    const auto out = decide(s, free_tpcs(), {idle(), ready(k), ready(k)}, p);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].tenant, 2u);
    EXPECT_EQ(out[0].borrowed, 8);
  }
  {
    auto s = make({critical("chat"), best_effort("first"), best_effort("second")});
    const auto out = decide(s, free_tpcs(), {idle(), ready(k), ready(k)}, p);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].tenant, 1u);
  }
}

TEST(TpcScheduler, NonSplittableKernelBorrowsOnlyWhatNoOwnerNeedsSoon) {
  auto s = make({critical("a"), critical("b"), best_effort("train")});  // a: 0-3, b: 4-7
  const auto k = tpc_kernel(4800, /*independent=*/false);
  WavePredictor p;  // unknown latency: its end cannot be predicted
  auto tpcs = free_tpcs();
  run_on(tpcs, 4, 6, 1, kNow + core::seconds(1));
  const auto out = decide(s, tpcs, {idle(), in_flight(), ready(k)}, p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tpcs, tpc_range(0, 4));
  EXPECT_EQ(out[0].atom.reason, AtomReason::kNotSplittable);
  EXPECT_EQ(out[0].atom.range, (device::BlockRange{.begin = 0, .end = 4800}));
}

TEST(TpcScheduler, NothingReadyNothingLaunched) {
  auto s = make({critical("chat"), best_effort("train")});
  WavePredictor p;
  auto tpcs = free_tpcs();
  run_on(tpcs, 0, 8, 1, kNow + 10);
  EXPECT_TRUE(decide(s, tpcs, {idle(), in_flight()}, p).empty());
}

TEST(TpcScheduler, SameStateSameDecision) {
  auto s = make({critical("a"), critical("b"), best_effort("x"), best_effort("y")});
  const auto k1 = tpc_kernel(4800);
  const auto k2 = tpc_kernel(32);
  WavePredictor p;
  p.set(k1, core::micros(70));
  p.set(k2, core::micros(400));
  auto tpcs = free_tpcs();
  run_on(tpcs, 1, 2, 0, kNow + core::millis(2));
  const std::vector<TenantState> tenants{in_flight(), ready(k2, 1), ready(k1), ready(k1)};
  const auto a = decide(s, tpcs, tenants, p);
  const auto b = decide(s, tpcs, tenants, p);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tenant, b[i].tenant);
    EXPECT_EQ(a[i].tpcs, b[i].tpcs);
    EXPECT_EQ(a[i].atom.range, b[i].atom.range);
  }
  // No TPC is granted twice.
  TpcSet seen;
  for (const auto& l : a) {
    EXPECT_TRUE((seen & l.tpcs).none());
    seen |= l.tpcs;
  }
}

}  // namespace
}  // namespace tessera::gpu
