// The atomizer: atoms are whole waves sized to the target, cover a grid exactly once in order, and
// kernels that are not block-independent are never split.

#include "tessera/gpu/policy/atomizer.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "gpu/policy/tpc_test_util.hpp"
#include "tessera/core/random.hpp"
#include "tessera/device/occupancy.hpp"

namespace tessera::gpu {
namespace {

using test::tpc_gpu;
using test::tpc_kernel;

TEST(Atomizer, WaveIsTpcsTimesSmsTimesResidentBlocks) {
  const auto k = tpc_kernel(100);
  ASSERT_EQ(device::blocks_per_sm(tpc_gpu().sm, k.block), 4);
  EXPECT_EQ(wave_blocks(tpc_gpu(), k, 3), 3 * 2 * 4);
  EXPECT_EQ(wave_blocks(tpc_gpu(), k, 8), 8 * 2 * 4);
}

TEST(Atomizer, SizesAtomsInWholeWavesThatFitTheTarget) {
  const auto k = tpc_kernel(240);  // 10 waves of 24 blocks on 3 TPCs
  const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                       .next_block = 0,
                                       .tpcs = 3,
                                       .whole_latency = core::micros(1000),  // 100 us per wave
                                       .target = core::micros(250)});
  EXPECT_EQ(a.reason, AtomReason::kSplit);
  EXPECT_EQ(a.range, (device::BlockRange{.begin = 0, .end = 48}));
  ASSERT_TRUE(a.predicted);
  EXPECT_EQ(*a.predicted, core::micros(200));
}

TEST(Atomizer, AtLeastOneWaveEvenWhenAWaveExceedsTheTarget) {
  const auto k = tpc_kernel(240);
  const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                       .next_block = 24,
                                       .tpcs = 3,
                                       .whole_latency = core::millis(10),  // 1 ms per wave
                                       .target = core::micros(250)});
  EXPECT_EQ(a.range, (device::BlockRange{.begin = 24, .end = 48}));
  EXPECT_EQ(a.reason, AtomReason::kSplit);
}

TEST(Atomizer, LastAtomIsClippedToTheGrid) {
  const auto k = tpc_kernel(250);  // 11 waves, the last one 10 blocks
  const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                       .next_block = 216,
                                       .tpcs = 3,
                                       .whole_latency = core::micros(1100),
                                       .target = core::micros(250)});
  EXPECT_EQ(a.range, (device::BlockRange{.begin = 216, .end = 250}));
  EXPECT_EQ(a.reason, AtomReason::kRestFits);
}

TEST(Atomizer, KernelThatFitsTheTargetRunsWhole) {
  const auto k = tpc_kernel(240);
  const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                       .next_block = 0,
                                       .tpcs = 3,
                                       .whole_latency = core::micros(100),
                                       .target = core::micros(250)});
  EXPECT_EQ(a.range, (device::BlockRange{.begin = 0, .end = 240}));
  EXPECT_EQ(a.reason, AtomReason::kRestFits);
}

TEST(Atomizer, NotBlockIndependentIsNeverSplit) {
  const auto k = tpc_kernel(240, /*independent=*/false);
  for (const std::int64_t from : {std::int64_t{0}, std::int64_t{17}}) {
    const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                         .next_block = from,
                                         .tpcs = 1,
                                         .whole_latency = core::millis(50),
                                         .target = core::micros(10)});
    EXPECT_EQ(a.reason, AtomReason::kNotSplittable);
    EXPECT_EQ(a.range, (device::BlockRange{.begin = from, .end = 240}));
  }
}

TEST(Atomizer, UnknownLatencyLaunchesTheRestWholeToProfileIt) {
  const auto k = tpc_kernel(240);
  const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                       .next_block = 48,
                                       .tpcs = 2,
                                       .whole_latency = std::nullopt,
                                       .target = core::micros(250)});
  EXPECT_EQ(a.reason, AtomReason::kUnknownLatency);
  EXPECT_EQ(a.range, (device::BlockRange{.begin = 48, .end = 240}));
  EXPECT_FALSE(a.predicted);
}

// Random grids, TPC counts, latencies and targets, with the TPC count changing between atoms as
// it does when TPCs are lent and taken back: the atoms tile the grid, each block exactly once, in
// order, and every atom but a kernel's last is whole waves on its TPCs.
TEST(Atomizer, AtomsCoverEveryBlockExactlyOnce) {
  core::RandomStream rng(20260429);
  for (int trial = 0; trial < 500; ++trial) {
    const auto k = tpc_kernel(1 + static_cast<std::int64_t>(rng.below(5000)));
    std::vector<int> covered(static_cast<std::size_t>(k.blocks), 0);
    std::int64_t next = 0;
    int atoms = 0;
    while (next < k.blocks) {
      const int tpcs = 1 + static_cast<int>(rng.below(8));
      const Atom a = next_atom(tpc_gpu(), {.kernel = &k,
                                           .next_block = next,
                                           .tpcs = tpcs,
                                           .whole_latency = core::micros(rng.uniform(1, 5000)),
                                           .target = core::micros(rng.uniform(1, 500))});
      ASSERT_EQ(a.range.begin, next);
      ASSERT_GT(a.range.end, a.range.begin);
      ASSERT_LE(a.range.end, k.blocks);
      if (a.range.end < k.blocks) {
        EXPECT_EQ(a.range.size() % wave_blocks(tpc_gpu(), k, tpcs), 0) << "trial " << trial;
      }
      for (auto b = a.range.begin; b < a.range.end; ++b) ++covered[static_cast<std::size_t>(b)];
      next = a.range.end;
      ASSERT_LT(++atoms, 100000);
    }
    for (std::size_t b = 0; b < covered.size(); ++b) {
      ASSERT_EQ(covered[b], 1) << "trial " << trial << " block " << b;
    }
  }
}

}  // namespace
}  // namespace tessera::gpu
