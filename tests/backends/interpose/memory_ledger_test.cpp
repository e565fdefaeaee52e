// The interposer's memory ledger on its own (no driver, no CUDA toolkit): limits, reservations,
// frees it did and did not see, and what cuMemGetInfo is told.

#include "tessera/backends/interpose/memory_ledger.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace tessera::interpose {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

TEST(ParseBytes, WholeNumbersWithDecimalOrBinaryUnits) {
  std::uint64_t b = 0;
  ASSERT_TRUE(parse_bytes("20GiB", b));
  EXPECT_EQ(b, 20ULL << 30);
  ASSERT_TRUE(parse_bytes("512MiB", b));
  EXPECT_EQ(b, 512 * kMiB);
  ASSERT_TRUE(parse_bytes("3GB", b));
  EXPECT_EQ(b, 3'000'000'000ULL);
  ASSERT_TRUE(parse_bytes("1000000", b));
  EXPECT_EQ(b, 1'000'000ULL);
  ASSERT_TRUE(parse_bytes("4096B", b));
  EXPECT_EQ(b, 4096ULL);
  for (const char* bad : {"", "GiB", "-1GiB", "1.5GiB", "20 GiB", "20gib", "0", "0MiB",
                          "20000000TiB", "99999999999999999999"}) {
    EXPECT_FALSE(parse_bytes(bad, b)) << bad;
  }
  EXPECT_FALSE(parse_bytes(nullptr, b));
}

TEST(MemoryLedger, AnAllocationPastTheLimitIsRefusedAndNothingIsHeld) {
  MemoryLedger ledger(10 * kMiB);
  ASSERT_TRUE(ledger.reserve(6 * kMiB));
  ledger.commit(Named::kAddress, 0x1000, 6 * kMiB, 6 * kMiB);
  EXPECT_FALSE(ledger.reserve(5 * kMiB));
  ASSERT_TRUE(ledger.reserve(4 * kMiB));  // exactly up to the limit
  ledger.commit(Named::kAddress, 0x2000, 4 * kMiB, 4 * kMiB);
  EXPECT_FALSE(ledger.reserve(1));
  const auto t = ledger.totals();
  EXPECT_EQ(t.used, 10 * kMiB);
  EXPECT_EQ(t.allocations, 2u);
  EXPECT_EQ(t.refused, 2u);
  // A free makes room again.
  EXPECT_EQ(ledger.release(Named::kAddress, 0x1000), 6 * kMiB);
  EXPECT_TRUE(ledger.reserve(5 * kMiB));
}

TEST(MemoryLedger, ADriverRoundingAnAllocationUpIsHeldInFull) {
  MemoryLedger ledger(10 * kMiB);
  ASSERT_TRUE(ledger.reserve(4 * kMiB));
  ledger.commit(Named::kAddress, 0x1000, 4 * kMiB, 5 * kMiB);  // rows padded to the pitch
  EXPECT_EQ(ledger.totals().used, 5 * kMiB);
  EXPECT_EQ(ledger.totals().peak, 5 * kMiB);
  EXPECT_FALSE(ledger.reserve(6 * kMiB));
  EXPECT_EQ(ledger.release(Named::kAddress, 0x1000), 5 * kMiB);
  EXPECT_EQ(ledger.totals().used, 0u);
}

TEST(MemoryLedger, AFailedAllocationGivesItsReservationBack) {
  MemoryLedger ledger(10 * kMiB);
  ASSERT_TRUE(ledger.reserve(8 * kMiB));
  ledger.cancel(8 * kMiB);
  EXPECT_EQ(ledger.totals().used, 0u);
  EXPECT_EQ(ledger.totals().peak, 8 * kMiB);
  EXPECT_EQ(ledger.totals().allocations, 0u);
  EXPECT_TRUE(ledger.reserve(10 * kMiB));
}

TEST(MemoryLedger, AFreeOfAnAddressItNeverSawIsCountedNotSubtracted) {
  MemoryLedger ledger(10 * kMiB);
  ASSERT_TRUE(ledger.reserve(kMiB));
  ledger.commit(Named::kAddress, 0x1000, kMiB, kMiB);
  EXPECT_EQ(ledger.release(Named::kAddress, 0x9000), 0u);
  EXPECT_EQ(ledger.release(Named::kAddress, 0x1000), kMiB);
  EXPECT_EQ(ledger.release(Named::kAddress, 0x1000), 0u);  // freed twice: the second is unknown
  const auto t = ledger.totals();
  EXPECT_EQ(t.used, 0u);
  EXPECT_EQ(t.untracked_frees, 2u);
}

TEST(MemoryLedger, AddressesAndHandlesAreNamesOfTheirOwn) {
  MemoryLedger ledger(0);
  ASSERT_TRUE(ledger.reserve(kMiB));
  ledger.commit(Named::kAddress, 0x1000, kMiB, kMiB);
  ASSERT_TRUE(ledger.reserve(2 * kMiB));
  ledger.commit(Named::kHandle, 0x1000, 2 * kMiB, 2 * kMiB);  // the same number, another allocation
  EXPECT_EQ(ledger.totals().used, 3 * kMiB);
  EXPECT_EQ(ledger.release(Named::kHandle, 0x1000), 2 * kMiB);
  EXPECT_EQ(ledger.release(Named::kAddress, 0x1000), kMiB);
  EXPECT_EQ(ledger.totals().untracked_frees, 0u);
}

TEST(MemoryLedger, MemGetInfoTellsTheLimitAndWhatIsLeftOfIt) {
  MemoryLedger ledger(10 * kMiB);
  ASSERT_TRUE(ledger.reserve(3 * kMiB));
  ledger.commit(Named::kAddress, 0x1000, 3 * kMiB, 3 * kMiB);
  auto i = ledger.info(70 * kMiB, 80 * kMiB);
  EXPECT_EQ(i.total, 10 * kMiB);
  EXPECT_EQ(i.free, 7 * kMiB);
  // Never more than the device itself has free (other processes use it too).
  i = ledger.info(2 * kMiB, 80 * kMiB);
  EXPECT_EQ(i.free, 2 * kMiB);
  // Without a limit the device's answer is passed on, and allocations are only counted.
  MemoryLedger counting(0);
  ASSERT_TRUE(counting.reserve(1ULL << 40));
  i = counting.info(70 * kMiB, 80 * kMiB);
  EXPECT_EQ(i.free, 70 * kMiB);
  EXPECT_EQ(i.total, 80 * kMiB);
}

TEST(MemoryLedger, ThreadsAllocatingAtOnceNeverPassTheLimit) {
  MemoryLedger ledger(100 * kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ledger, t] {
      for (std::uint64_t i = 0; i < 1000; ++i) {
        if (!ledger.reserve(kMiB)) continue;
        const std::uint64_t address = (static_cast<std::uint64_t>(t) << 32) | (i << 8);
        ledger.commit(Named::kAddress, address, kMiB, kMiB);
        if (i % 2 == 0) ledger.release(Named::kAddress, address);
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto t = ledger.totals();
  EXPECT_LE(t.peak, 100 * kMiB);
  EXPECT_LE(t.used, 100 * kMiB);
  EXPECT_GT(t.refused, 0u);
  EXPECT_EQ(t.untracked_frees, 0u);
}

}  // namespace
}  // namespace tessera::interpose
