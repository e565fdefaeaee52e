#include "tessera/gpu/modes/virtual_context.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace tessera::gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

workload::Kernel kernel(std::string_view name, std::int64_t blocks) {
  workload::Kernel k;
  k.name = name;
  k.blocks = blocks;
  return k;
}

// Two groups: {a, b} x2 then {c}, so the walk crosses a repeat and a group boundary.
workload::KernelSequencePtr abab_c(workload::Phase phase = workload::Phase::kDecode) {
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->groups.push_back({.kernels = {kernel("a", 4), kernel("b", 2)}, .repeat = 2});
  seq->groups.push_back({.kernels = {}, .repeat = 3});  // empty groups are skipped
  seq->groups.push_back({.kernels = {kernel("c", 1)}, .repeat = 1});
  seq->phase = phase;
  return seq;
}

struct Done {
  std::vector<device::SubmissionDone> list;
  device::DoneCallback callback() {
    return [this](const device::SubmissionDone& d) { list.push_back(d); };
  }
};

TEST(VirtualContext, WalksKernelsInOrderAcrossRepeatsAndGroups) {
  VirtualContext vc(7);
  Done done;
  ASSERT_TRUE(vc.push(abab_c(), 1, done.callback(), 100));
  std::vector<std::string_view> order;
  core::Nanos t = 200;
  while (vc.has_next()) {
    order.push_back(vc.next().name);
    EXPECT_EQ(vc.next_phase(), workload::Phase::kDecode);
    EXPECT_EQ(vc.next_tag(), 1u);
    ASSERT_TRUE(vc.launch_blocks(vc.next().blocks, t));
    EXPECT_EQ(vc.pieces_in_flight(), 1);
    ASSERT_TRUE(vc.piece_finished(t + 5));
    t += 10;
  }
  EXPECT_THAT(order, ElementsAre("a", "b", "a", "b", "c"));
  ASSERT_EQ(done.list.size(), 1u);
  EXPECT_EQ(done.list[0].stream, 7u);
  EXPECT_EQ(done.list[0].tag, 1u);
  EXPECT_EQ(done.list[0].submitted, 100);
  EXPECT_EQ(done.list[0].started, 200);
  EXPECT_EQ(done.list[0].finished, 245);
  EXPECT_TRUE(vc.idle());
}

TEST(VirtualContext, AtomsAdvanceTheBlockCursorAndTheLastAtomMovesOn) {
  VirtualContext vc;
  Done done;
  ASSERT_TRUE(vc.push(workload::single_kernel(kernel("k", 10)), 3, done.callback(), 0));
  EXPECT_EQ(vc.next_block(), 0);
  ASSERT_TRUE(vc.launch_blocks(4, 1));
  EXPECT_EQ(vc.next_block(), 4);
  EXPECT_TRUE(vc.has_next());
  ASSERT_TRUE(vc.launch_blocks(10, 2));
  EXPECT_FALSE(vc.has_next());
  EXPECT_EQ(vc.pieces_in_flight(), 2);
  ASSERT_TRUE(vc.piece_finished(3));
  EXPECT_TRUE(done.list.empty());  // the last atom is still running
  EXPECT_FALSE(vc.idle());
  ASSERT_TRUE(vc.piece_finished(4));
  ASSERT_EQ(done.list.size(), 1u);
  EXPECT_EQ(done.list[0].started, 1);
  EXPECT_EQ(done.list[0].finished, 4);
  EXPECT_TRUE(vc.idle());
}

TEST(VirtualContext, RejectsBadRangesAndEmptySubmissions) {
  VirtualContext vc;
  const auto empty = vc.push(std::make_shared<workload::KernelSequence>(), 9, nullptr, 0);
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message(), HasSubstr("submission 9 has no kernel"));
  EXPECT_FALSE(vc.push(nullptr, 9, nullptr, 0));
  EXPECT_TRUE(vc.idle());

  EXPECT_FALSE(vc.launch_blocks(1, 0));  // nothing to launch
  EXPECT_FALSE(vc.piece_finished(0));    // nothing in flight
  ASSERT_TRUE(vc.push(workload::single_kernel(kernel("k", 4)), 1, nullptr, 0));
  ASSERT_TRUE(vc.launch_blocks(2, 0));
  const auto backwards = vc.launch_blocks(2, 0);
  ASSERT_FALSE(backwards);
  EXPECT_THAT(backwards.error().message(), HasSubstr("blocks [2, 2) of kernel 'k'"));
  EXPECT_FALSE(vc.launch_blocks(5, 0));  // past the grid
  EXPECT_EQ(vc.next_block(), 2);
}

TEST(VirtualContext, QueuesSubmissionsAndLetsDoneCallbacksPushMore) {
  VirtualContext vc;
  std::vector<std::uint64_t> finished;
  device::DoneCallback again;
  again = [&](const device::SubmissionDone& d) {
    finished.push_back(d.tag);
    if (d.tag == 1) {
      ASSERT_TRUE(vc.push(workload::single_kernel(kernel("later", 1)), 3, again, d.finished));
    }
  };
  ASSERT_TRUE(vc.push(workload::single_kernel(kernel("x", 1)), 1, again, 0));
  ASSERT_TRUE(
      vc.push(workload::single_kernel(kernel("y", 1), workload::Phase::kPrefill), 2, again, 0));
  EXPECT_EQ(vc.queued_submissions(), 2u);
  ASSERT_TRUE(vc.launch_blocks(1, 0));
  // The second submission is next while the first is still in flight.
  EXPECT_EQ(vc.next().name, "y");
  EXPECT_EQ(vc.next_phase(), workload::Phase::kPrefill);
  ASSERT_TRUE(vc.launch_blocks(1, 0));
  EXPECT_FALSE(vc.has_next());
  ASSERT_TRUE(vc.piece_finished(1));  // ends submission 1, whose callback pushes submission 3
  EXPECT_EQ(vc.queued_submissions(), 2u);
  ASSERT_TRUE(vc.has_next());
  EXPECT_EQ(vc.next().name, "later");
  ASSERT_TRUE(vc.piece_finished(2));
  ASSERT_TRUE(vc.launch_blocks(1, 2));
  ASSERT_TRUE(vc.piece_finished(3));
  EXPECT_THAT(finished, ElementsAre(1u, 2u, 3u));
  EXPECT_TRUE(vc.idle());
}

TEST(VirtualContext, CountsKernelsLeftAndWhereTheNextOneIs) {
  VirtualContext vc;
  EXPECT_EQ(vc.kernels_left(), 0);
  ASSERT_TRUE(vc.push(abab_c(), 1, nullptr, 0));
  EXPECT_EQ(vc.kernels_left(), 5);
  EXPECT_EQ(vc.next_position(), (workload::SequenceCursor{.group = 0, .rep = 0, .index = 0}));
  ASSERT_TRUE(vc.launch_blocks(4, 0));  // a
  ASSERT_TRUE(vc.launch_blocks(2, 0));  // b
  ASSERT_TRUE(vc.launch_blocks(4, 0));  // a, second repetition
  EXPECT_EQ(vc.kernels_left(), 2);
  EXPECT_EQ(vc.next_position(), (workload::SequenceCursor{.group = 0, .rep = 1, .index = 1}));
  EXPECT_EQ(vc.next().name, "b");
}

TEST(VirtualContext, ARunHandsOutKernelsShortOfTheLastAndEndsNoSubmission) {
  VirtualContext vc;
  Done done;
  const auto seq = abab_c();
  ASSERT_TRUE(vc.push(seq, 3, done.callback(), 10));
  EXPECT_EQ(vc.next_sequence(), seq);
  ASSERT_TRUE(vc.launch_run(4, 20));
  EXPECT_EQ(vc.pieces_in_flight(), 1);
  EXPECT_EQ(vc.next().name, "c");
  EXPECT_EQ(vc.kernels_left(), 1);
  ASSERT_TRUE(vc.run_finished(4, 60));
  EXPECT_TRUE(done.list.empty());  // the last kernel goes in a piece of its own
  ASSERT_TRUE(vc.launch_blocks(1, 60));
  ASSERT_TRUE(vc.piece_finished(70));
  ASSERT_EQ(done.list.size(), 1u);
  EXPECT_EQ(done.list[0].started, 20);
  EXPECT_EQ(done.list[0].finished, 70);
  EXPECT_TRUE(vc.idle());
}

TEST(VirtualContext, ARunEndedEarlyHandsOutWhatItDidNotRunAgain) {
  VirtualContext vc;
  ASSERT_TRUE(vc.push(abab_c(), 1, nullptr, 0));
  ASSERT_TRUE(vc.launch_run(4, 0));  // a b a b
  ASSERT_TRUE(vc.run_finished(3, 5));
  EXPECT_EQ(vc.next().name, "b");
  EXPECT_EQ(vc.next_position(), (workload::SequenceCursor{.group = 0, .rep = 1, .index = 1}));
  EXPECT_EQ(vc.kernels_left(), 2);
  ASSERT_TRUE(vc.launch_run(1, 5));
  ASSERT_TRUE(vc.run_finished(0, 6));  // ended before its first kernel: nothing ran
  EXPECT_EQ(vc.next().name, "b");
  EXPECT_EQ(vc.kernels_left(), 2);
}

TEST(VirtualContext, RefusesRunsThatWouldEndTheSubmissionOrStartInsideAKernel) {
  VirtualContext vc;
  EXPECT_FALSE(vc.launch_run(1, 0));  // nothing queued
  ASSERT_TRUE(vc.push(abab_c(), 1, nullptr, 0));
  auto whole = vc.launch_run(5, 0);
  ASSERT_FALSE(whole);
  EXPECT_THAT(whole.error().message(), HasSubstr("never the submission's last kernel"));
  EXPECT_FALSE(vc.launch_run(0, 0));
  ASSERT_TRUE(vc.launch_blocks(2, 0));  // half of a's blocks
  EXPECT_FALSE(vc.launch_run(1, 0));
  ASSERT_TRUE(vc.piece_finished(1));
  EXPECT_FALSE(vc.run_finished(0, 1));  // no run in flight
}

TEST(VirtualContext, ARunEndsEarlyOnlyWhenNothingWasLaunchedAfterIt) {
  VirtualContext vc;
  ASSERT_TRUE(vc.push(abab_c(), 1, nullptr, 0));
  ASSERT_TRUE(vc.launch_run(2, 0));
  ASSERT_TRUE(vc.launch_blocks(4, 0));
  auto early = vc.run_finished(1, 1);
  ASSERT_FALSE(early);
  EXPECT_THAT(early.error().message(), HasSubstr("nothing was launched after it"));
  ASSERT_TRUE(vc.run_finished(2, 1));  // ran whole: fine with a piece behind it
}

TEST(VirtualContext, CountsKernelsBeforeTheFirstThatCanBePreempted) {
  auto seq = std::make_shared<workload::KernelSequence>();
  auto persistent = kernel("p", 8);
  persistent.checkpoints = 4;
  seq->groups.push_back({.kernels = {kernel("a", 1), kernel("b", 1)}, .repeat = 3});
  seq->groups.push_back({.kernels = {kernel("c", 1), persistent, kernel("d", 1)}, .repeat = 2});
  VirtualContext vc;
  ASSERT_TRUE(vc.push(seq, 1, nullptr, 0));
  EXPECT_EQ(vc.kernels_before_checkpointed(100), 7);  // a b a b a b c
  EXPECT_EQ(vc.kernels_before_checkpointed(3), 3);
  ASSERT_TRUE(vc.launch_run(7, 0));
  ASSERT_TRUE(vc.run_finished(7, 1));
  EXPECT_EQ(vc.kernels_before_checkpointed(100), 0);  // p is next
  ASSERT_TRUE(vc.launch_blocks(8, 1));
  ASSERT_TRUE(vc.piece_finished(2));
  // d, then c of the second repetition, then p again.
  EXPECT_EQ(vc.kernels_before_checkpointed(100), 2);
}

}  // namespace
}  // namespace tessera::gpu
