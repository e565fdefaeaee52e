#include "tessera/daemon/tenant_table.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::daemon {
namespace {

using daemon_abi::Assignment;
using daemon_abi::AssignmentPage;

gpu::PartitionGrid h100() {
  return *gpu::PartitionGrid::of(*hw::find_gpu("h100"));  // 132 SMs, steps of 8
}

TenantTable table(int devices = 1) {
  return TenantTable(std::vector<gpu::PartitionGrid>(static_cast<std::size_t>(devices), h100()),
                     *make_node_policy("cogpu"));
}

RegisterRequest tenant(std::string name, TenantClass c, int device = 0) {
  RegisterRequest r;
  r.tenant = std::move(name);
  r.settings.tenant_class = c;
  r.device = device;
  return r;
}

void launch(AssignmentPage& page, core::Nanos now) {
  page.launches.fetch_add(1);
  page.last_launch_ns.store(static_cast<std::uint64_t>(now));
}

Assignment of(const AssignmentPage& page) {
  return daemon_abi::unpack(page.assignment.load());
}

const core::Nanos t0 = core::seconds(1);

TEST(TenantTable, ABusyInferenceGetsMostSmsAndTheTrainerTheRestDisjoint) {
  TenantTable t = table();
  AssignmentPage chat{}, train{};
  ASSERT_TRUE(t.add(tenant("chat", TenantClass::kLatencyCritical), &chat, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  EXPECT_EQ(of(chat).sms, daemon_abi::kHoldSms);  // nothing assigned before the first round
  EXPECT_EQ(chat.granule_sms.load(), 8u);
  launch(chat, t0);
  launch(train, t0);
  EXPECT_EQ(t.tick(t0), 2);
  const Assignment c = of(chat);
  const Assignment b = of(train);
  // cogpu: an inference with work and no observed step asks for every usable SM; a best-effort
  // tenant with work keeps the minimum partition (8 on an H100). 128 usable SMs in all.
  EXPECT_EQ(c.first_sm, 0u);
  EXPECT_EQ(c.sms, 120u);
  EXPECT_EQ(b.first_sm, 120u);
  EXPECT_EQ(b.sms, 8u);
  EXPECT_EQ(t.tick(t0 + core::millis(1)), 0) << "nothing changed, nothing is rewritten";
  EXPECT_EQ(of(chat).sequence, c.sequence);
}

TEST(TenantTable, WhenTheInferenceGoesIdleTheTrainerGetsTheGpuAndGivesItBack) {
  TableOptions options;
  options.idle_after = core::millis(20);
  options.min_residency = core::millis(2);
  TenantTable t({h100()}, *make_node_policy("cogpu"), options);
  AssignmentPage chat{}, train{};
  ASSERT_TRUE(t.add(tenant("chat", TenantClass::kLatencyCritical), &chat, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  launch(chat, t0);
  launch(train, t0);
  t.tick(t0);
  ASSERT_EQ(of(train).sms, 8u);

  // The inference stops launching; the trainer goes on. Past idle_after it has no work.
  core::Nanos now = t0;
  for (int i = 1; i <= 30; ++i) {
    now = t0 + core::millis(i);
    launch(train, now);
    t.tick(now);
  }
  EXPECT_EQ(of(train).first_sm, 0u);
  EXPECT_EQ(of(train).sms, 128u);
  EXPECT_EQ(of(chat).sms, daemon_abi::kHoldSms);

  // It comes back: at the next round it has most of the GPU again.
  now += core::millis(1);
  launch(chat, now);
  launch(train, now);
  t.tick(now);
  EXPECT_EQ(of(chat).sms, 120u);
  EXPECT_EQ(of(train).sms, 8u);
  EXPECT_EQ(of(train).first_sm, 120u);
}

// A table under mechanism `m` with an inference ("chat") and a trainer ("train") registered.
TenantTable chat_and_trainer(Mechanism m, const char* policy, AssignmentPage& chat,
                             AssignmentPage& train) {
  TableOptions options;
  options.mechanism = m;
  TenantTable t({h100()}, *make_node_policy(policy), options);
  EXPECT_TRUE(t.add(tenant("chat", TenantClass::kLatencyCritical), &chat, t0));
  EXPECT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  return t;
}

// The gate: no partitions; the trainer's launches are held while the inference has work.
TEST(TenantTable, TheGateHoldsTheTrainerWhileTheInferenceHasWork) {
  AssignmentPage chat{}, train{};
  TenantTable t = chat_and_trainer(Mechanism::kGate, "cogpu", chat, train);
  launch(train, t0);
  t.tick(t0);
  EXPECT_EQ(of(train).sms, daemon_abi::kWholeGpuSms) << "alone with work: the whole GPU";
  EXPECT_EQ(of(chat).sms, daemon_abi::kWholeGpuSms);
  launch(chat, t0 + core::millis(1));
  launch(train, t0 + core::millis(1));
  t.tick(t0 + core::millis(1));
  EXPECT_EQ(of(train).sms, daemon_abi::kHoldSms);
  EXPECT_EQ(of(chat).sms, daemon_abi::kWholeGpuSms);
  const core::Nanos later = t0 + core::millis(50);  // the inference idle past idle_after
  launch(train, later);
  t.tick(later);
  EXPECT_EQ(of(train).sms, daemon_abi::kWholeGpuSms);
  EXPECT_EQ(t.to_json()["mechanism"], "gate");
  EXPECT_FALSE(mechanism_named("mps"));
}

// mps-percentage: everyone launches on the whole GPU, busy or not; a tenant with an SM share is
// told it in percent, rounded up, and one without is told nothing (as under any other mechanism).
TEST(TenantTable, MpsPercentageLeavesEveryoneTheWholeGpuAndCapsByShare) {
  AssignmentPage chat{}, train{};
  TenantTable t = chat_and_trainer(Mechanism::kMpsPercentage, "priority-fill", chat, train);
  launch(chat, t0);
  launch(train, t0);
  t.tick(t0);
  EXPECT_EQ(of(chat).sms, daemon_abi::kWholeGpuSms);
  EXPECT_EQ(of(train).sms, daemon_abi::kWholeGpuSms) << "MPS caps it, not the page";
  EXPECT_EQ(t.to_json()["mechanism"], "mps-percentage");
  TenantSettings s;
  EXPECT_EQ(t.mps_percentage(s), 0);
  for (const auto& [share, percent] : {std::pair{0.3, 30}, {0.255, 26}, {0.001, 1}, {1.0, 100}}) {
    s.sm_share = share;
    EXPECT_EQ(t.mps_percentage(s), percent) << share;
  }
  EXPECT_EQ(table().mps_percentage(s), 0) << "not under green contexts";
  EXPECT_EQ(*mechanism_named("mps-percentage"), Mechanism::kMpsPercentage);
}

// A decoding inference (its graph launches timed: 10 ms on 120 SMs) with a 50 ms TPOT target:
// cogpu gives it what a step needs to take half the target, 120 x 10 / 25 = 48 SMs, and the
// trainer the rest.
TEST(TenantTable, TimedStepsSizeTheInferenceToItsTpotTarget) {
  TenantTable t = table();
  AssignmentPage chat{}, train{};
  RegisterRequest r = tenant("chat", TenantClass::kLatencyCritical);
  r.settings.tpot_slo = core::millis(50);
  ASSERT_TRUE(t.add(r, &chat, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  launch(chat, t0);
  launch(train, t0);
  t.tick(t0);
  ASSERT_EQ(of(chat).sms, 120u) << "no step seen yet: every SM it can have";
  const core::Nanos later = t0 + core::millis(5);  // past the 2 ms minimum residency
  chat.last_step_ns.store(static_cast<std::uint64_t>(core::millis(10)));
  chat.last_step_sms.store(120);
  chat.steps.store(1);
  launch(chat, later);
  launch(train, later);
  t.tick(later);
  EXPECT_EQ(of(chat).sms, 48u);
  EXPECT_EQ(of(train).sms, 80u);
  EXPECT_EQ(of(train).first_sm, 48u);
  EXPECT_EQ(t.to_json()["tenants"][0]["last_step_ms"], 10.0);
}

TEST(TenantTable, ARemovedTenantsSmsGoToTheOthers) {
  TenantTable t = table();
  AssignmentPage chat{}, train{};
  const int chat_id = *t.add(tenant("chat", TenantClass::kLatencyCritical), &chat, t0);
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  launch(chat, t0);
  launch(train, t0);
  t.tick(t0);
  t.remove(chat_id);
  EXPECT_EQ(t.size(), 1u);
  launch(train, t0 + core::millis(1));
  t.tick(t0 + core::millis(1));
  EXPECT_EQ(of(train).sms, 128u);
}

TEST(TenantTable, TenantsOnDifferentDevicesDoNotShareAPlan) {
  TenantTable t = table(2);
  AssignmentPage a{}, b{};
  ASSERT_TRUE(t.add(tenant("a", TenantClass::kBestEffort, 0), &a, t0));
  ASSERT_TRUE(t.add(tenant("b", TenantClass::kBestEffort, 1), &b, t0));
  launch(a, t0);
  launch(b, t0);
  t.tick(t0);
  EXPECT_EQ(of(a).sms, 128u);
  EXPECT_EQ(of(b).sms, 128u);
}

TEST(TenantTable, RefusesDuplicatesUnknownDevicesAndTenantsAndPolicies) {
  TenantTable t = table();
  AssignmentPage a{}, b{};
  ASSERT_TRUE(t.add(tenant("a", TenantClass::kBestEffort), &a, t0));
  auto dup = t.add(tenant("a", TenantClass::kBestEffort), &b, t0);
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("already registered"), std::string::npos);
  auto dev = t.add(tenant("b", TenantClass::kBestEffort, 3), &b, t0);
  ASSERT_FALSE(dev);
  EXPECT_NE(dev.error().message().find("device 3 is not one of this daemon's 1"),
            std::string::npos);
  SetRequest set;
  set.tenant = "nobody";
  set.priority = 1;
  EXPECT_FALSE(t.set(set));
  auto policy = t.set_policy("fifo");
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message().find("known: priority-fill, cogpu, tpot-first, "
                                          "static-partitions"),
            std::string::npos);
  EXPECT_EQ(t.policy_name(), "cogpu");
  ASSERT_TRUE(t.set_policy("tpot-first"));
  EXPECT_EQ(t.policy_name(), "tpot-first");
}

RegisterRequest served(std::string name, int priority = 0) {
  RegisterRequest r = tenant(std::move(name), TenantClass::kLatencyCritical);
  r.settings.tpot_slo = core::millis(50);
  r.settings.priority = priority;
  return r;
}

// priority-fill: the inference (latency-critical with a target) launches on the whole GPU on a
// stream one level above the least; while it has work the trainer is held to the highest 5% of
// the 128 usable SMs, rounded up to the grid (SMs 120-127); when it goes idle the trainer gets
// the whole GPU, and loses it again when the inference is back.
TEST(TenantTable, PriorityFillServesTheInferenceFirstAndHoldsTheTrainerToTheReserve) {
  TenantTable t({h100()}, *make_node_policy("priority-fill"));
  AssignmentPage chat{}, train{};
  ASSERT_TRUE(t.add(served("chat"), &chat, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  launch(chat, t0);
  launch(train, t0);
  EXPECT_EQ(t.tick(t0), 2);
  EXPECT_EQ(of(chat).sms, daemon_abi::kWholeGpuSms);
  EXPECT_EQ(of(chat).priority, 1u);
  EXPECT_EQ(of(train).first_sm, 120u);
  EXPECT_EQ(of(train).sms, 8u);
  EXPECT_EQ(of(train).priority, 0u);

  core::Nanos now = t0;
  for (int i = 1; i <= 30; ++i) {
    now = t0 + core::millis(i);
    launch(train, now);
    t.tick(now);
  }
  EXPECT_EQ(of(train).sms, daemon_abi::kWholeGpuSms) << "the inference is idle";
  EXPECT_EQ(of(train).priority, 0u);
  EXPECT_EQ(of(chat).sms, daemon_abi::kWholeGpuSms) << "an idle inference keeps its place";
  EXPECT_EQ(of(chat).priority, 1u);

  now += core::millis(1);
  launch(chat, now);
  launch(train, now);
  EXPECT_EQ(t.tick(now), 1) << "only the trainer's assignment changes";
  EXPECT_EQ(of(train).first_sm, 120u);
  EXPECT_EQ(of(train).sms, 8u);
  const nlohmann::json j = t.to_json();
  EXPECT_EQ(j["policy"], "priority-fill");
  EXPECT_EQ(j["tenants"][0]["assignment"], "whole-gpu");
  EXPECT_EQ(j["tenants"][0]["stream_priority"], 1);
  EXPECT_EQ(j["tenants"][1]["stream_priority"], 0);
}

// priority-fill with slo_guided: the inference's timed steps (10 ms against half its 50 ms TPOT
// target) each grow the trainer's reserve a grid step at the round that sees them; a 30 ms step
// halves it, rounded down to the grid, never below the 5% floor.
TEST(TenantTable, SloGuidedPriorityFillGrowsTheReserveWithTheInferencesSlack) {
  TableOptions options;
  options.policy.slo_guided = true;
  TenantTable t({h100()}, *make_node_policy("priority-fill", options.policy), options);
  AssignmentPage chat{}, train{};
  ASSERT_TRUE(t.add(served("chat"), &chat, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  core::Nanos now = t0;
  auto round = [&](core::Nanos step) {
    now += core::millis(1);
    if (step > 0) {
      chat.last_step_ns.store(static_cast<std::uint64_t>(step));
      chat.last_step_sms.store(132);
      chat.steps.fetch_add(1);
    }
    launch(chat, now);
    launch(train, now);
    t.tick(now);
    return of(train);
  };
  EXPECT_EQ(round(0).first_sm, 120u) << "no step seen: the floor, 8 SMs";
  EXPECT_EQ(round(core::millis(10)).first_sm, 112u);
  EXPECT_EQ(round(0).first_sm, 112u) << "no new step: no change";
  const Assignment grown = round(core::millis(10));
  EXPECT_EQ(grown.first_sm, 104u);
  EXPECT_EQ(grown.sms, 24u);
  EXPECT_EQ(t.to_json()["devices"][0]["reserve_sms"], 24);
  EXPECT_EQ(round(core::millis(30)).sms, 8u) << "24 halved is 12, rounded down to 8";
  EXPECT_EQ(of(chat).sms, daemon_abi::kWholeGpuSms);
}

// Two served inferences get one stream level per distinct priority, the more important higher;
// a latency-critical tenant without a target is best-effort here; the reserve follows the share.
TEST(TenantTable, PriorityFillRanksServedTenantsAndSizesTheReserveByItsShare) {
  TableOptions options;
  options.policy.best_effort_share = 0.25;
  TenantTable t({h100()}, *make_node_policy("priority-fill", options.policy), options);
  AssignmentPage a{}, b{}, untargeted{}, train{};
  ASSERT_TRUE(t.add(served("a", 5), &a, t0));
  ASSERT_TRUE(t.add(served("b", 1), &b, t0));
  ASSERT_TRUE(t.add(tenant("untargeted", TenantClass::kLatencyCritical), &untargeted, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  for (AssignmentPage* p : {&a, &b, &untargeted, &train}) launch(*p, t0);
  t.tick(t0);
  EXPECT_EQ(of(a).priority, 2u);
  EXPECT_EQ(of(b).priority, 1u);
  EXPECT_EQ(of(a).sms, daemon_abi::kWholeGpuSms);
  for (AssignmentPage* p : {&untargeted, &train}) {
    EXPECT_EQ(of(*p).first_sm, 96u);
    EXPECT_EQ(of(*p).sms, 32u);
    EXPECT_EQ(of(*p).priority, 0u);
  }
  // `ctl policy` keeps the table's options.
  ASSERT_TRUE(t.set_policy("cogpu"));
  ASSERT_TRUE(t.set_policy("priority-fill"));
  launch(a, t0 + core::millis(1));
  launch(train, t0 + core::millis(1));
  t.tick(t0 + core::millis(1));
  EXPECT_EQ(of(train).sms, 32u);
  auto bad = make_node_policy("priority-fill", NodePolicyOptions{.best_effort_share = 0});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("must be in (0, 1]"), std::string::npos);
}

// static-partitions: fixed slices from the shares, whatever the tenants do (none of them launches
// here): 'a' half of the 128 usable SMs, the two without a share a quarter each; a share that
// would take the GPU's shares past 1 is refused at registration and at set, naming the tenant.
TEST(TenantTable, StaticPartitionsSliceTheGpuByShareWhateverTheTenantsDo) {
  TenantTable t({h100()}, *make_node_policy("static-partitions"));
  AssignmentPage a{}, b{}, c{}, d{};
  RegisterRequest ra = tenant("a", TenantClass::kLatencyCritical);
  ra.settings.sm_share = 0.5;
  ASSERT_TRUE(t.add(ra, &a, t0));
  ASSERT_TRUE(t.add(tenant("b", TenantClass::kBestEffort), &b, t0));
  ASSERT_TRUE(t.add(tenant("c", TenantClass::kBestEffort), &c, t0));
  t.tick(t0);
  EXPECT_EQ(of(a).first_sm, 0u);
  EXPECT_EQ(of(a).sms, 64u);
  EXPECT_EQ(of(b).first_sm, 64u);
  EXPECT_EQ(of(b).sms, 32u);
  EXPECT_EQ(of(c).first_sm, 96u);
  EXPECT_EQ(of(c).sms, 32u);

  RegisterRequest rd = tenant("d", TenantClass::kBestEffort);
  rd.settings.sm_share = 0.6;
  auto over = t.add(rd, &d, t0);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message().find("tenant 'd': an SM share of 0.6 with the 0.5 the others "
                                        "on device 0 hold adds up to more than 1"),
            std::string::npos)
      << over.error().message();
  SetRequest set;
  set.tenant = "b";
  set.sm_share = 0.6;
  EXPECT_FALSE(t.set(set));
  set.sm_share = 0.3;
  ASSERT_TRUE(t.set(set));
  t.tick(t0 + core::millis(1));
  EXPECT_EQ(of(b).sms, 32u) << "0.3 of 128 is 38.4, rounded down to the grid";
  EXPECT_EQ(of(c).first_sm, 96u);
  EXPECT_EQ(of(c).sms, 24u) << "the 0.2 left is 25.6, rounded down to the grid";
  EXPECT_EQ(t.to_json()["tenants"][1]["sm_share"], 0.3);
}

// A memory limit set on a tenant goes to its page at once (the interposer reads it at its next
// allocation) and shows in the listing; 0 removes it.
TEST(TenantTable, SetWritesTheMemoryLimitToThePage) {
  TenantTable t = table();
  AssignmentPage a{};
  ASSERT_TRUE(t.add(tenant("a", TenantClass::kBestEffort), &a, t0));
  EXPECT_EQ(a.memory_limit_assigned.load(), 0u);
  SetRequest set;
  set.tenant = "a";
  set.memory_limit = 8ULL << 30;
  ASSERT_TRUE(t.set(set));
  EXPECT_EQ(a.memory_limit_assigned.load(), 8ULL << 30);
  EXPECT_EQ(t.to_json()["tenants"][0]["memory_limit_assigned"], 8ULL << 30);
  set.memory_limit = 0;
  ASSERT_TRUE(t.set(set));
  EXPECT_EQ(a.memory_limit_assigned.load(), 0u);
}

TEST(TenantTable, SetChangesWhatThePolicySees) {
  TenantTable t = table();
  AssignmentPage a{}, b{};
  ASSERT_TRUE(t.add(tenant("a", TenantClass::kBestEffort), &a, t0));
  ASSERT_TRUE(t.add(tenant("b", TenantClass::kBestEffort), &b, t0));
  launch(a, t0);
  launch(b, t0);
  t.tick(t0);
  EXPECT_EQ(of(a).sms, 64u);  // two best-effort tenants split the GPU
  EXPECT_EQ(of(b).sms, 64u);
  SetRequest set;
  set.tenant = "a";
  set.tenant_class = TenantClass::kLatencyCritical;
  ASSERT_TRUE(t.set(set));
  launch(a, t0 + core::millis(1));
  launch(b, t0 + core::millis(1));
  t.tick(t0 + core::millis(1));
  EXPECT_EQ(of(a).sms, 120u);
  EXPECT_EQ(of(b).sms, 8u);
  const nlohmann::json j = t.to_json();
  EXPECT_EQ(j["tenants"][0]["class"], "latency-critical");
  EXPECT_EQ(j["tenants"][0]["assignment"]["sms"], 120);
  EXPECT_EQ(j["devices"][0]["usable_sms"], 128);
}

GrantRequest grant(std::string claim, std::string tenant, int device, double share = 0) {
  GrantRequest g;
  g.claim = std::move(claim);
  g.tenant = std::move(tenant);
  g.device = device;
  g.settings.tenant_class = TenantClass::kLatencyCritical;
  g.settings.priority = 7;
  g.settings.tpot_slo = core::millis(50);
  g.settings.sm_share = share;
  g.settings.memory_limit = 4ULL << 30;
  return g;
}

// A process registering under a granted name gets the grant's device and settings (its memory
// limit on its page at once), whatever it asked for; the listing names the claim.
TEST(TenantTable, ARegistrationUnderAGrantedNameGetsTheGrantsDeviceAndSettings) {
  TenantTable t = table(2);
  ASSERT_EQ(t.grant(grant("c1", "chat", 1, 0.25)), false) << "a new grant";
  AssignmentPage chat{}, train{};
  RegisterRequest asked = tenant("chat", TenantClass::kBestEffort, 0);
  asked.settings.priority = -3;
  ASSERT_TRUE(t.add(asked, &chat, t0));
  ASSERT_TRUE(t.add(tenant("train", TenantClass::kBestEffort), &train, t0));
  const std::vector<TenantView> views = t.tenants();
  EXPECT_EQ(views[0].device, 1);
  EXPECT_EQ(views[0].settings, grant("c1", "chat", 1, 0.25).settings);
  EXPECT_EQ(views[0].claim, "c1");
  EXPECT_EQ(views[1].claim, "");
  EXPECT_EQ(chat.memory_limit_assigned.load(), 4ULL << 30);
  EXPECT_EQ(train.memory_limit_assigned.load(), 0u);
  const nlohmann::json j = t.to_json();
  EXPECT_EQ(j["tenants"][0]["claim"], "c1");
  EXPECT_FALSE(j["tenants"][1].contains("claim"));
  ASSERT_EQ(j["grants"].size(), 1u);
  EXPECT_EQ(j["grants"][0]["claim"], "c1");
  EXPECT_EQ(j["grants"][0]["tenant"], "chat");
  EXPECT_EQ(j["grants"][0]["device"], 1);
  EXPECT_EQ(j["grants"][0]["class"], "latency-critical");
  EXPECT_EQ(j["grants"][0]["memory_limit_bytes"], 4ULL << 30);
  EXPECT_FALSE(j["grants"][0].contains("op"));

  // A second process under the name is refused, as without a grant.
  AssignmentPage again{};
  auto second = t.add(tenant("chat", TenantClass::kBestEffort), &again, t0);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("'chat' is already registered"), std::string::npos);

  // Revoked, the grant is gone; the registered process keeps its settings.
  EXPECT_TRUE(t.revoke("c1"));
  EXPECT_FALSE(t.revoke("c1"));
  EXPECT_TRUE(t.grants().empty());
  EXPECT_EQ(t.tenants()[0].settings.priority, 7);
  EXPECT_EQ(t.tenants()[0].claim, "");
}

// The same grant again changes nothing; the claim with other fields, or the name under another
// claim, or a device the daemon lacks, is refused naming what is wrong, and nothing is kept.
TEST(TenantTable, AGrantIsIdempotentAndDoesNotChange) {
  TenantTable t = table(2);
  ASSERT_EQ(t.grant(grant("c1", "chat", 0)), false);
  EXPECT_EQ(t.grant(grant("c1", "chat", 0)), true) << "the same grant again";
  GrantRequest other = grant("c1", "chat", 0);
  other.settings.priority = 8;
  auto changed = t.grant(other);
  ASSERT_FALSE(changed);
  EXPECT_NE(changed.error().message().find("claim 'c1' is already granted"), std::string::npos)
      << changed.error().message();
  EXPECT_NE(changed.error().message().find("revoke it first"), std::string::npos);
  auto taken = t.grant(grant("c2", "chat", 1));
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message().find(
                "tenant 'chat' is already granted to claim 'c1'; claim 'c2' cannot have it too"),
            std::string::npos)
      << taken.error().message();
  auto nowhere = t.grant(grant("c3", "batch", 2));
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message().find("device 2 is not one of this daemon's 2 GPU(s)"),
            std::string::npos)
      << nowhere.error().message();
  ASSERT_EQ(t.grants().size(), 1u);
  EXPECT_EQ(t.grants()[0], grant("c1", "chat", 0));
}

// A device's grants and its registered tenants under no grant share its SMs: a grant past what
// is free is refused saying how much is, and a grant's share is kept for its processes even
// before they register (another registration cannot take it).
TEST(TenantTable, GrantsAndRegistrationsShareTheDevicesSms) {
  TenantTable t = table(2);
  AssignmentPage a{}, b{}, c{};
  RegisterRequest ra = tenant("a", TenantClass::kBestEffort);
  ra.settings.sm_share = 0.25;
  ASSERT_TRUE(t.add(ra, &a, t0));
  ASSERT_EQ(t.grant(grant("c1", "chat", 0, 0.5)), false);
  auto over = t.grant(grant("c2", "batch", 0, 0.5));
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message().find(
                "device 0 has 0.25 of its SMs free to grant; claim 'c2' asks 0.5"),
            std::string::npos)
      << over.error().message();
  EXPECT_EQ(t.grant(grant("c2", "batch", 1, 0.5)), false) << "device 1 is free";
  EXPECT_EQ(t.grant(grant("c3", "small", 0, 0.25)), false) << "exactly what is left";
  ASSERT_EQ(t.revoke("c3"), true);

  RegisterRequest rb = tenant("b", TenantClass::kBestEffort);
  rb.settings.sm_share = 0.5;
  auto taken = t.add(rb, &b, t0);
  ASSERT_FALSE(taken) << "0.5 of device 0 is granted to 'chat', registered or not";
  EXPECT_NE(taken.error().message().find("with the 0.75 the others on device 0 hold"),
            std::string::npos)
      << taken.error().message();
  ASSERT_TRUE(t.add(tenant("chat", TenantClass::kBestEffort), &c, t0)) << "its own share fits";
  SetRequest more;
  more.tenant = "chat";
  more.sm_share = 0.75;
  EXPECT_TRUE(t.set(more)) << "an operator may raise a granted tenant's share into what is free";
  more.sm_share = 0.8;
  EXPECT_FALSE(t.set(more));
  auto none_left = t.grant(grant("c4", "late", 0, 0.1));
  ASSERT_FALSE(none_left);
  EXPECT_NE(none_left.error().message().find("device 0 has 0 of its SMs free"), std::string::npos)
      << none_left.error().message();
}

}  // namespace
}  // namespace tessera::daemon
