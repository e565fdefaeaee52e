#include "tessera/backends/sim/gpu/sm_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace tessera::sim {
namespace {

TEST(SmSet, FirstAndFromMaskAgree) {
  for (int n : {0, 1, 63, 64, 65, 132, 256}) {
    EXPECT_EQ(SmSet::first(n).count(), n);
    EXPECT_TRUE(SmSet::from_mask(device::SmMask::first(n)).contains(SmSet::first(n)));
    EXPECT_TRUE(SmSet::first(n).contains(SmSet::from_mask(device::SmMask::first(n))));
  }
  EXPECT_TRUE(SmSet::first(0).none());
}

TEST(SmSet, LowestTakesTheLowestSmsAcrossWords) {
  const SmSet odd = SmSet::from_mask([] {
    device::SmMask m;
    for (int i = 1; i < 200; i += 2) m.set(i);
    return m;
  }());
  ASSERT_EQ(odd.count(), 100);
  for (int k : {0, 1, 5, 31, 32, 33, 40, 63, 64, 99, 100, 150}) {
    int taken = -1;
    const SmSet low = odd.lowest(k, taken);
    EXPECT_EQ(taken, std::min(k, 100)) << k;
    EXPECT_EQ(low.count(), taken) << k;
    EXPECT_TRUE(odd.contains(low)) << k;
    // Exactly the first `taken` odd SMs.
    device::SmMask expected;
    for (int i = 0; i < taken; ++i) expected.set(2 * i + 1);
    EXPECT_TRUE(low.contains(SmSet::from_mask(expected)) &&
                SmSet::from_mask(expected).contains(low))
        << k;
  }
}

// Against the definition, SM by SM, on sets of every density (sparse, dense, full words, the
// top bit of a word set) and every k.
TEST(SmSet, LowestMatchesTakingSmsOneByOne) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const double density = (trial % 10) / 9.0;
    device::SmMask mask;
    std::bernoulli_distribution bit(density);
    for (int i = 0; i < device::kMaxSms; ++i) {
      if (bit(rng)) mask.set(i);
    }
    const SmSet set = SmSet::from_mask(mask);
    for (int k = 0; k <= set.count() + 1; ++k) {
      device::SmMask expected;
      int left = k;
      for (int i = 0; i < device::kMaxSms && left > 0; ++i) {
        if (mask.test(i)) {
          expected.set(i);
          --left;
        }
      }
      int taken = -1;
      const SmSet low = set.lowest(k, taken);
      const SmSet want = SmSet::from_mask(expected);
      ASSERT_TRUE(low.contains(want) && want.contains(low)) << "trial " << trial << ", k " << k;
      ASSERT_EQ(taken, std::min(k, set.count()));
    }
  }
}

TEST(SmSet, SetAlgebra) {
  const SmSet a = SmSet::from_mask(device::SmMask::range(0, 70));
  const SmSet b = SmSet::from_mask(device::SmMask::range(60, 130));
  EXPECT_TRUE(a.overlaps(b));
  EXPECT_EQ((a & b).count(), 10);
  EXPECT_EQ((a | b).count(), 130);
  EXPECT_EQ((a & ~b).count(), 60);
  EXPECT_FALSE((a & ~b).overlaps(b));
  SmSet c = a;
  c &= ~a;
  EXPECT_TRUE(c.none());
  c |= b;
  EXPECT_TRUE(c.contains(b) && !c.contains(a));
}

}  // namespace
}  // namespace tessera::sim
