#include "tessera/mig/policy/reconfig_planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace tessera::mig {
namespace {

class PlanInstance : public ::testing::Test {
 protected:
  PlanInstance() : geometry_(*hw::find_mig_geometry("a100-40gb")) {
    auto s = LayoutSpace::build(geometry_);
    EXPECT_TRUE(s.has_value());
    space_.emplace(std::move(s.value()));
  }

  StateId state(std::vector<Placement> instances) {
    auto s = space_->find(Layout{std::move(instances)});
    EXPECT_TRUE(s.has_value());
    return s.value_or(0);
  }

  hw::MigGeometry geometry_;
  std::optional<LayoutSpace> space_;
};

TEST_F(PlanInstance, ReusesAnIdleInstanceOfTheProfile) {
  const StateId s = state({{19, 0}, {19, 1}, {14, 2}, {9, 4}});
  auto plan = plan_instance(*space_, s, {{19, 1}}, 19);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, PlanKind::kReuse);
  EXPECT_EQ(plan->instance, (Placement{19, 0}));
  EXPECT_TRUE(plan->destroy.empty());
  EXPECT_EQ(plan->result, s);
  EXPECT_EQ(plan->fcr, space_->fcr(s));
  // Two idle ones: the highest start.
  plan = plan_instance(*space_, s, {}, 19);
  EXPECT_EQ(plan->instance, (Placement{19, 1}));
}

TEST_F(PlanInstance, PlacesInFreeSlicesWhereFcrStaysHighest) {
  const StateId s = state({{9, 4}});
  auto plan = plan_instance(*space_, s, {{9, 4}}, 19);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, PlanKind::kPlace);
  EXPECT_TRUE(plan->destroy.empty());
  // Same answer as choose_placement when nothing needs destroying.
  auto choice = choose_placement(*space_, s, 19);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(plan->instance, choice->placement);
  EXPECT_EQ(plan->result, choice->next);
  EXPECT_EQ(plan->fcr, choice->fcr);
}

TEST_F(PlanInstance, FusesTwoIdleOneSliceInstancesIntoATwoSlice) {
  // Every memory slice in use; only the idle 1g pair at 0-1 can make room for a 2g.
  const StateId s = state({{19, 0}, {19, 1}, {14, 2}, {9, 4}});
  auto plan = plan_instance(*space_, s, {{14, 2}, {9, 4}}, 14);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, PlanKind::kFusion);
  EXPECT_EQ(plan->destroy, (std::vector<Placement>{{19, 0}, {19, 1}}));
  EXPECT_EQ(plan->instance, (Placement{14, 0}));
  EXPECT_EQ(plan->result, state({{14, 0}, {14, 2}, {9, 4}}));
}

TEST_F(PlanInstance, SplitsAnIdleThreeSliceForAOneSlice) {
  const StateId s = state({{5, 0}, {9, 4}});
  auto plan = plan_instance(*space_, s, {{5, 0}}, 19);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, PlanKind::kFission);
  EXPECT_EQ(plan->destroy, (std::vector<Placement>{{9, 4}}));
  EXPECT_EQ(plan->instance.profile_id, 19);
  EXPECT_GE(plan->instance.start, 4);
  // 1g@6 keeps 3 full layouts of the right half open, 1g@4 or 1g@5 one.
  EXPECT_EQ(plan->instance.start, 6);
  EXPECT_EQ(plan->fcr, space_->fcr(plan->result));
}

TEST_F(PlanInstance, FewestDestroyedWins) {
  // A 2g: the idle 1g.10gb at 4 alone (one destroyed) beats the idle 1g pair at 0-1 (two).
  const StateId s = state({{19, 0}, {19, 1}, {14, 2}, {15, 4}, {15, 6}});
  auto plan = plan_instance(*space_, s, {{14, 2}, {15, 6}}, 14);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->destroy, (std::vector<Placement>{{15, 4}}));
  EXPECT_EQ(plan->instance, (Placement{14, 4}));
  // Same memory slices, not smaller: a rebuild, not a fusion.
  EXPECT_EQ(plan->kind, PlanKind::kRebuild);
}

TEST_F(PlanInstance, NulloptWhenOnlyBusyInstancesBlock) {
  const StateId s = state({{5, 0}, {9, 4}});
  EXPECT_FALSE(plan_instance(*space_, s, {{5, 0}, {9, 4}}, 19).has_value());
  EXPECT_FALSE(plan_instance(*space_, s, {{5, 0}, {9, 4}}, 0).has_value());
  // The 7g needs both gone; one busy blocks it.
  EXPECT_FALSE(plan_instance(*space_, s, {{9, 4}}, 0).has_value());
  auto both_idle = plan_instance(*space_, s, {}, 0);
  ASSERT_TRUE(both_idle.has_value());
  EXPECT_EQ(both_idle->kind, PlanKind::kFusion);
  EXPECT_EQ(both_idle->destroy, (std::vector<Placement>{{5, 0}, {9, 4}}));
  // A profile outside the space has no plan.
  EXPECT_FALSE(plan_instance(*space_, s, {}, 20).has_value());
}

TEST_F(PlanInstance, RandomStatesNeverTouchBusyInstances) {
  std::mt19937 rng(4);
  int planned = 0;
  for (int round = 0; round < 3000; ++round) {
    const auto s = static_cast<StateId>(rng() % space_->size());
    const Layout& l = space_->layout(s);
    std::set<Placement> busy;
    for (const Placement& p : l.instances) {
      if (rng() % 2 == 0) busy.insert(p);
    }
    const int profile = space_->profile_ids()[rng() % space_->profile_ids().size()];
    auto plan = plan_instance(*space_, s, busy, profile);
    if (!plan) continue;
    ++planned;
    EXPECT_EQ(plan->instance.profile_id, profile);
    for (const Placement& d : plan->destroy) {
      EXPECT_FALSE(busy.contains(d));
      EXPECT_NE(std::ranges::find(l.instances, d), l.instances.end());
    }
    EXPECT_TRUE(std::ranges::is_sorted(plan->destroy));
    EXPECT_FALSE(busy.contains(plan->instance));
    Layout expected;
    for (const Placement& p : l.instances) {
      if (std::ranges::find(plan->destroy, p) == plan->destroy.end()) {
        expected.instances.push_back(p);
      }
    }
    if (plan->kind != PlanKind::kReuse) expected.instances.push_back(plan->instance);
    auto result = space_->find(expected);
    ASSERT_TRUE(result.has_value());
    EXPECT_EQ(*result, plan->result);
    EXPECT_EQ(plan->fcr, space_->fcr(plan->result));
    // Busy instances survive.
    for (const Placement& b : busy) {
      const auto& r = space_->layout(plan->result).instances;
      EXPECT_NE(std::ranges::find(r, b), r.end());
    }
    if (plan->destroy.empty()) {
      EXPECT_TRUE(plan->kind == PlanKind::kReuse || plan->kind == PlanKind::kPlace);
    }
  }
  EXPECT_GT(planned, 1000);
}

TEST(PlanKindNames, AreStable) {
  EXPECT_EQ(to_string(PlanKind::kReuse), "reuse");
  EXPECT_EQ(to_string(PlanKind::kPlace), "place");
  EXPECT_EQ(to_string(PlanKind::kFusion), "fusion");
  EXPECT_EQ(to_string(PlanKind::kFission), "fission");
  EXPECT_EQ(to_string(PlanKind::kRebuild), "rebuild");
}

}  // namespace
}  // namespace tessera::mig
