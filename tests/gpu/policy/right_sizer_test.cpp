#include "tessera/gpu/policy/right_sizer.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace tessera::gpu {
namespace {

constexpr double kSlip = 0.25;  // bound: 125 ns for 100 ns on all TPCs

TEST(RightSizedTpcs, KeepsEveryTpcUntilTheFullGridWasMeasured) {
  EXPECT_EQ(right_sized_tpcs({}, std::nullopt, 10, kSlip), 10);
  const std::vector<LatencySample> elsewhere{{.tpcs = 5, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(elsewhere, std::nullopt, 10, kSlip), 10);
  const std::vector<LatencySample> zero{{.tpcs = 10, .latency_ns = 0}};
  EXPECT_EQ(right_sized_tpcs(zero, std::nullopt, 10, kSlip), 10);
}

TEST(RightSizedTpcs, FirstStepStaysWithinTheSlipForAComputeBoundKernel) {
  // 10 x 100 / 125 = 8 TPCs: a kernel that scaled perfectly would take exactly the bound there.
  const std::vector<LatencySample> seen{{.tpcs = 10, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(seen, std::nullopt, 10, kSlip), 8);
}

TEST(RightSizedTpcs, WalksOnFromTheFewestTpcsWithinTheSlip) {
  // 8 TPCs took 110 ns (within 125): from there, 8 x 110 / 125 = 7.04 would not be a step, so
  // one TPC less.
  const std::vector<LatencySample> seen{{.tpcs = 8, .latency_ns = 110},
                                        {.tpcs = 10, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(seen, std::nullopt, 10, kSlip), 7);
}

TEST(RightSizedTpcs, NeverRetriesACountFoundTooSlow) {
  const std::vector<LatencySample> seen{{.tpcs = 7, .latency_ns = 130},
                                        {.tpcs = 8, .latency_ns = 110},
                                        {.tpcs = 10, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(seen, std::nullopt, 10, kSlip), 8);
}

TEST(RightSizedTpcs, TheFittedCurveStopsTheWalkEarlierButNeverPushesItFurther) {
  // Flat so far at 8 TPCs (the measured step would be 8 x 100 / 125 = 6.4, so 7), but a curve of
  // perfect scaling says 8 is the fewest within the slip: stay.
  const std::vector<LatencySample> flat_so_far{{.tpcs = 8, .latency_ns = 100},
                                               {.tpcs = 10, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(flat_so_far, std::nullopt, 10, kSlip), 7);
  EXPECT_EQ(right_sized_tpcs(flat_so_far, ScalingFit{.m_ns = 1000, .b_ns = 0}, 10, kSlip), 8);
  // A flat curve says 1 TPC would do; the walk still takes the step the measurements allow.
  const std::vector<LatencySample> full{{.tpcs = 10, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(full, ScalingFit{.m_ns = 0, .b_ns = 100}, 10, kSlip), 8);
}

TEST(RightSizedTpcs, OneTpcWithinTheSlipIsTheEnd) {
  const std::vector<LatencySample> seen{{.tpcs = 1, .latency_ns = 120},
                                        {.tpcs = 10, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(seen, std::nullopt, 10, kSlip), 1);
}

TEST(RightSizedTpcs, ANoSlipWalkStillMovesOneTpcAtATime) {
  const std::vector<LatencySample> seen{{.tpcs = 4, .latency_ns = 100}};
  EXPECT_EQ(right_sized_tpcs(seen, std::nullopt, 4, 0), 3);
}

}  // namespace
}  // namespace tessera::gpu
