// The simulator's pending queue: a pass's order, skipping a shape, pushes during a pass.

#include "tessera/backends/sim/cluster/internal/pending_queue.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::sim::detail {
namespace {

PendingShape shape(std::int32_t priority, int gpus) {
  cluster::Pod p;
  p.priority = priority;
  p.request.gpus = gpus;
  return pending_shape(p);
}

TEST(PendingQueue, PassGoesByPriorityThenWaitThenJob) {
  PendingQueue q;
  q.push(shape(0, 1), 5, 1);
  q.push(shape(10, 2), 7, 2);
  q.push(shape(0, 2), 3, 3);
  q.push(shape(10, 1), 7, 0);
  q.push(shape(0, 1), 5, 4);
  std::vector<int> seen;
  ASSERT_TRUE(q.pass([&](int job) -> core::Result<bool> {
    seen.push_back(job);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<int>{0, 2, 3, 1, 4}));
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.jobs_in_push_order(), (std::vector<int>{1, 2, 3, 0, 4}));
}

TEST(PendingQueue, FalseSkipsTheRestOfTheShape) {
  PendingQueue q;
  for (int j = 0; j < 4; ++j) q.push(shape(0, 1), j, j);
  q.push(shape(0, 2), 10, 9);
  std::vector<int> seen;
  ASSERT_TRUE(q.pass([&](int job) -> core::Result<bool> {
    seen.push_back(job);
    return job != 1;
  }));
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 9}));
}

TEST(PendingQueue, JobsPushedOrErasedDuringAPass) {
  PendingQueue q;
  q.push(shape(5, 1), 0, 0);
  q.push(shape(0, 1), 0, 1);
  q.push(shape(0, 1), 0, 3);
  std::vector<int> seen;
  ASSERT_TRUE(q.pass([&](int job) -> core::Result<bool> {
    seen.push_back(job);
    if (job == 0) {
      q.erase(shape(5, 1), 0, 0);  // bound
      q.push(shape(0, 1), 0, 2);   // a victim, queued between 1 and 3: waits for the next pass
      q.push(shape(0, 3), 0, 7);   // likewise, a shape of its own
    }
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 3}));
  seen.clear();
  ASSERT_TRUE(q.pass([&](int job) -> core::Result<bool> {
    seen.push_back(job);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 7}));
  EXPECT_EQ(q.size(), 4u);
}

TEST(PendingQueue, AnErrorEndsThePass) {
  PendingQueue q;
  q.push(shape(0, 1), 0, 0);
  q.push(shape(0, 2), 1, 1);
  int visits = 0;
  const core::Status s = q.pass([&](int) -> core::Result<bool> {
    ++visits;
    return core::failf(core::Domain::kSim, core::Code::kInvalidArgument, "bad pod");
  });
  EXPECT_FALSE(s);
  EXPECT_EQ(visits, 1);
}

}  // namespace
}  // namespace tessera::sim::detail
