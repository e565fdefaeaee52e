#include "tessera/gpu/policy/tpc_board.hpp"

#include <gtest/gtest.h>

namespace tessera::gpu {
namespace {

TpcSet tpc_range(int first, int end) {
  TpcSet s;
  for (int j = first; j < end; ++j) s.set(static_cast<std::size_t>(j));
  return s;
}

TEST(TpcBoard, StartsWithEveryTpcFreeAndNoneBeyondTheGpu) {
  const TpcBoard board(6, 2);
  EXPECT_EQ(board.free(), tpc_range(0, 6));
  EXPECT_TRUE(board.busy().none());
  EXPECT_EQ(board.runner(3), kNoTenant);
}

TEST(TpcBoard, ALaunchTakesItsTpcsAndIgnoresThoseBeyondTheGpu) {
  TpcBoard board(6, 2);
  board.launch(1, tpc_range(2, 8), 500);
  EXPECT_EQ(board.running(1), tpc_range(2, 6));
  EXPECT_EQ(board.busy(), tpc_range(2, 6));
  EXPECT_EQ(board.free(), tpc_range(0, 2));
  EXPECT_EQ(board.until(1), 500);
  EXPECT_EQ(board.runner(2), 1);
  board.finish(1);
  EXPECT_EQ(board.free(), tpc_range(0, 6));
  EXPECT_TRUE(board.running(1).none());
}

TEST(TpcBoard, TakenBackTpcsReturnToTheAtomStillRunningThere) {
  TpcBoard board(8, 3);
  board.launch(2, tpc_range(0, 8), 900);  // a borrower's atom on every TPC
  board.launch(0, tpc_range(0, 4), 300);  // the owner takes 0-3 back at once
  EXPECT_EQ(board.running(0), tpc_range(0, 4));
  EXPECT_EQ(board.running(2), tpc_range(4, 8));
  EXPECT_EQ(board.runner(1), 0);
  // The owner ends first: 0-3 run the atom again until it ends.
  board.finish(0);
  EXPECT_EQ(board.running(2), tpc_range(0, 8));
  EXPECT_TRUE(board.free().none());
  board.finish(2);
  EXPECT_EQ(board.free(), tpc_range(0, 8));
}

TEST(TpcBoard, TpcsOfAnAtomThatEndedFirstStayWithTheOwner) {
  TpcBoard board(8, 2);
  board.launch(1, tpc_range(0, 8), 900);
  board.launch(0, tpc_range(0, 4), 300);
  board.finish(1);  // only 4-7 were still its own
  EXPECT_EQ(board.running(0), tpc_range(0, 4));
  EXPECT_EQ(board.free(), tpc_range(4, 8));
  board.finish(0);
  EXPECT_EQ(board.free(), tpc_range(0, 8));
}

TEST(TpcBoard, WalksASetInAscendingOrder) {
  TpcSet s;
  for (const int j : {3, 64, 65, 200}) s.set(static_cast<std::size_t>(j));
  std::vector<int> seen;
  for (int j = first_tpc(s); j < kMaxTpcs; j = next_tpc(s, j)) seen.push_back(j);
  EXPECT_EQ(seen, (std::vector<int>{3, 64, 65, 200}));
  EXPECT_EQ(first_tpc(TpcSet{}), kMaxTpcs);
}

TEST(TpcBoard, LowestTpcsTakesFromTheBottomAcrossWords) {
  TpcSet s;
  for (const int j : {3, 64, 65, 200}) s.set(static_cast<std::size_t>(j));
  int last = 0;
  TpcSet want;
  want.set(3);
  want.set(64);
  EXPECT_EQ(lowest_tpcs(s, 2, last), want);
  EXPECT_EQ(last, 64);
  EXPECT_EQ(lowest_tpcs(s, 9, last), s);
  EXPECT_EQ(last, 200);
  EXPECT_TRUE(lowest_tpcs(s, 0, last).none());
  EXPECT_EQ(last, -1);
  EXPECT_EQ(lowest_tpcs(tpc_range(0, 66), 66, last), tpc_range(0, 66));
  EXPECT_EQ(last, 65);
}

}  // namespace
}  // namespace tessera::gpu
