#include "tessera/mig/policy/restart_policy.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "mig/policy/a100_layout_space.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/layout_space.hpp"

namespace tessera::mig {
namespace {

using test::k1g10;
using test::k1g5;
using test::k3g20;
using test::k7g40;
using test::kGiB;

class RestartPolicyTest : public test::A100LayoutSpaceTest {
 protected:
  static PeakPrediction converged(std::int64_t peak) {
    return PeakPrediction{.peak_bytes = peak, .point_bytes = peak, .converged = true};
  }

  // 1g.5gb + 1g.5gb + 3g.20gb: the static scheme's only larger step from 1g.5gb is 3g.20gb.
  const Layout static_layout_{{{k1g5, 0}, {k1g5, 1}, {k3g20, 4}}};
};

TEST_F(RestartPolicyTest, DynamicSchemesMoveToTheNextLargerProfileOfTheSpace) {
  for (const Scheme s : {Scheme::kA, Scheme::kB}) {
    const RestartPolicy policy(*space_, s, static_layout_);
    EXPECT_EQ(policy.larger_than(k1g5)->id, k1g10);
    EXPECT_EQ(policy.larger_than(k7g40), nullptr);
  }
}

TEST_F(RestartPolicyTest, StaticMovesToTheSmallestLargerInstanceOfItsLayout) {
  const RestartPolicy policy(*space_, Scheme::kStatic, static_layout_);
  EXPECT_EQ(policy.larger_than(k1g5)->id, k3g20);
  EXPECT_EQ(policy.larger_than(k3g20), nullptr);
  // Needs are capped at the layout's largest instance, not the GPU's.
  EXPECT_EQ(policy.capped(30 * kGiB), 20 * kGiB);
}

TEST_F(RestartPolicyTest, SequentialNeverRestartsLarger) {
  const RestartPolicy policy(*space_, Scheme::kSequential, static_layout_);
  EXPECT_EQ(policy.larger_than(k1g5), nullptr);
  EXPECT_FALSE(policy.after_out_of_memory(k1g5, 4 * kGiB, 5 * kGiB, std::nullopt));
  EXPECT_FALSE(policy.early_restart(converged(9 * kGiB), k1g5, 5 * kGiB, 4 * kGiB));
}

TEST_F(RestartPolicyTest, AfterOutOfMemoryNeedsTheMostOfNeedPeakAndCappedPrediction) {
  const RestartPolicy policy(*space_, Scheme::kB, static_layout_);
  const auto by_peak = policy.after_out_of_memory(k1g5, 4 * kGiB, 5 * kGiB, std::nullopt);
  ASSERT_TRUE(by_peak);
  EXPECT_EQ(by_peak->min_profile_id, k1g10);
  EXPECT_EQ(by_peak->need_bytes, 5 * kGiB);
  const auto by_prediction =
      policy.after_out_of_memory(k1g5, 4 * kGiB, 5 * kGiB, converged(12 * kGiB));
  ASSERT_TRUE(by_prediction);
  EXPECT_EQ(by_prediction->need_bytes, 12 * kGiB);
  // A prediction past the largest instance asks for the largest, never more.
  const auto past = policy.after_out_of_memory(k1g5, 4 * kGiB, 5 * kGiB, converged(90 * kGiB));
  ASSERT_TRUE(past);
  EXPECT_EQ(past->need_bytes, 40 * kGiB);
  // Out of memory on the largest: nothing to restart on.
  EXPECT_FALSE(policy.after_out_of_memory(k7g40, 40 * kGiB, 40 * kGiB, std::nullopt));
}

TEST_F(RestartPolicyTest, EarlyRestartFiresOnAConvergedPredictionAboveTheInstance) {
  const RestartPolicy policy(*space_, Scheme::kB, static_layout_);
  const auto early = policy.early_restart(converged(7 * kGiB), k1g5, 5 * kGiB, 4 * kGiB);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->restart.min_profile_id, k1g10);
  EXPECT_EQ(early->restart.need_bytes, 7 * kGiB);
  EXPECT_EQ(early->predicted_peak_bytes, 7 * kGiB);
  // The prediction is reported as made, the need capped.
  const auto huge = policy.early_restart(converged(90 * kGiB), k1g5, 5 * kGiB, 4 * kGiB);
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->restart.need_bytes, 40 * kGiB);
  EXPECT_EQ(huge->predicted_peak_bytes, 90 * kGiB);
}

TEST_F(RestartPolicyTest, EarlyRestartWaitsForAConvergedPredictionThatDoesNotFit) {
  const RestartPolicy policy(*space_, Scheme::kB, static_layout_);
  EXPECT_FALSE(policy.early_restart(std::nullopt, k1g5, 5 * kGiB, 4 * kGiB));
  PeakPrediction unsure = converged(7 * kGiB);
  unsure.converged = false;
  EXPECT_FALSE(policy.early_restart(unsure, k1g5, 5 * kGiB, 4 * kGiB));
  EXPECT_FALSE(policy.early_restart(converged(5 * kGiB), k1g5, 5 * kGiB, 4 * kGiB));
  // On the largest instance a stop would only lose work: the job runs on and may still fit.
  EXPECT_FALSE(policy.early_restart(converged(50 * kGiB), k7g40, 40 * kGiB, 4 * kGiB));
}

}  // namespace
}  // namespace tessera::mig
