#include "tessera/mig/policy/co_run.hpp"

#include <gtest/gtest.h>

namespace tessera::mig {
namespace {

using core::seconds;

TEST(CoRunTest, SlowdownsAreLookedUpEitherWayRound) {
  CoRunTable table;
  table[{2, 5, 9}] = Slowdowns{.first = 1.2, .second = 1.8};
  EXPECT_EQ(slowdowns(table, 2, 5, 9), (std::pair{1.2, 1.8}));
  EXPECT_EQ(slowdowns(table, 5, 2, 9), (std::pair{1.8, 1.2}));
  EXPECT_FALSE(slowdowns(table, 2, 5, 19).has_value());
  EXPECT_FALSE(slowdowns(table, 2, 6, 9).has_value());
}

TEST(CoRunTest, AJobThatEndsBeforeTheOtherBeginsRunsAlone) {
  const auto [a, b] = shared_ends({.begins = 0, .work = seconds(10), .slowdown = 2},
                                  {.begins = seconds(12), .work = seconds(5), .slowdown = 3});
  EXPECT_EQ(a, seconds(10));
  EXPECT_EQ(b, seconds(17));
}

TEST(CoRunTest, BothSlowUntilTheFirstEndsThenTheOtherRunsAlone) {
  // Together from 0: a needs 10 s alone at 2x (20 s), b 4 s alone at 1.5x (6 s). b ends at 6 s,
  // when a has done 3 s of its work; its other 7 s run alone.
  const auto [a, b] = shared_ends({.begins = 0, .work = seconds(10), .slowdown = 2},
                                  {.begins = 0, .work = seconds(4), .slowdown = 1.5});
  EXPECT_EQ(b, seconds(6));
  EXPECT_EQ(a, seconds(13));
  // The same pair named the other way round.
  const auto [b2, a2] = shared_ends({.begins = 0, .work = seconds(4), .slowdown = 1.5},
                                    {.begins = 0, .work = seconds(10), .slowdown = 2});
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
}

TEST(CoRunTest, AJobThatBeginsLaterSharesOnlyTheRest) {
  // a runs alone for 4 s (6 s left), then both at 2x; b's 2 s of work take 4 s, ending at 8 s,
  // by when a has done 2 s more; its last 4 s run alone.
  const auto [a, b] = shared_ends({.begins = 0, .work = seconds(10), .slowdown = 2},
                                  {.begins = seconds(4), .work = seconds(2), .slowdown = 2});
  EXPECT_EQ(b, seconds(8));
  EXPECT_EQ(a, seconds(12));
}

TEST(CoRunTest, WorkLeftCountsAloneThenSlowed) {
  const ShareTerm a{.begins = 0, .work = seconds(10), .slowdown = 2};
  const ShareTerm b{.begins = seconds(4), .work = seconds(2), .slowdown = 2};
  EXPECT_EQ(work_left_at(a, b, 0), seconds(10));
  EXPECT_EQ(work_left_at(a, b, seconds(4)), seconds(6));
  EXPECT_EQ(work_left_at(a, b, seconds(8)), seconds(4));
  EXPECT_EQ(work_left_at(a, b, seconds(100)), 0);
}

TEST(CoRunTest, AJoinerBeginsAfterItsStartAndThePartnerIsRebasedToNow) {
  // The partner has run alone 4 s of its 10; the joiner's work begins after a 2 s start.
  const auto [partner, joiner] = join({.begins = 0, .work = seconds(10), .slowdown = 1}, seconds(4),
                                      seconds(2), seconds(5), {1.5, 2.0});
  EXPECT_EQ(partner.begins, seconds(4));
  EXPECT_EQ(partner.work, seconds(6));
  EXPECT_EQ(partner.slowdown, 1.5);
  EXPECT_EQ(joiner.begins, seconds(6));
  EXPECT_EQ(joiner.work, seconds(5));
  EXPECT_EQ(joiner.slowdown, 2.0);
  // A partner still starting (its work begins at 9 s) holds the joiner's work back to then.
  EXPECT_EQ(join({.begins = seconds(9), .work = seconds(3), .slowdown = 1}, seconds(4), seconds(2),
                 seconds(5), {1.5, 2.0})
                .second.begins,
            seconds(9));
}

TEST(CoRunTest, TheSurvivorRunsAloneFromTheOthersEndOrFromWhenItsWorkBegins) {
  const ShareTerm a{.begins = 0, .work = seconds(10), .slowdown = 2};
  const ShareTerm b{.begins = seconds(4), .work = seconds(2), .slowdown = 2};
  const ShareTerm left = survivor(a, b, seconds(8));
  EXPECT_EQ(left.begins, seconds(8));
  EXPECT_EQ(left.work, seconds(4));
  EXPECT_EQ(left.slowdown, 1);
  const ShareTerm starting{.begins = seconds(9), .work = seconds(3), .slowdown = 2};
  EXPECT_EQ(survivor(starting, b, seconds(8)).begins, seconds(9));
  EXPECT_EQ(survivor(starting, b, seconds(8)).work, seconds(3));
}

}  // namespace
}  // namespace tessera::mig
