#include "tessera/gpu/policy/physical_contexts.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_gpu.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

PartitionGrid grid_of(std::string_view gpu) {
  const auto spec = hw::find_gpu(gpu);
  EXPECT_TRUE(spec) << spec.error().message();
  const auto grid = PartitionGrid::of(spec.value());
  EXPECT_TRUE(grid) << grid.error().message();
  return grid.value();
}

// Every partition is a contiguous run of whole granules, partitions and pool are disjoint, and
// together they cover the device exactly.
void expect_well_formed(const PartitionGrid& g, const PhysicalLayout& layout) {
  device::SmMask all = layout.pool;
  for (const auto& p : layout.partitions) {
    EXPECT_FALSE(p.overlaps(all));
    all = all | p;
    if (p.empty()) continue;
    EXPECT_EQ(p.count() % g.granularity, 0);
    EXPECT_GE(p.count(), g.min_sms);
    int first = 0;
    while (!p.test(first)) ++first;
    EXPECT_EQ(first % g.granularity, 0);
    EXPECT_EQ(p, device::SmMask::range(first, first + p.count()));
  }
  EXPECT_EQ(all, device::SmMask::first(g.device_sms));
}

TEST(PartitionGrid, TakesHopperAndAmpereGranularityFromTheCatalog) {
  const auto h100 = grid_of("h100");
  EXPECT_EQ(h100.granularity, 8);
  EXPECT_EQ(h100.min_sms, 8);
  EXPECT_EQ(h100.usable_sms, 128);  // 132 SMs: 4 never form a green context of their own
  const auto a100 = grid_of("a100-40gb");
  EXPECT_EQ(a100.granularity, 2);
  EXPECT_EQ(a100.min_sms, 4);
  EXPECT_EQ(a100.usable_sms, 108);

  EXPECT_EQ(h100.round(0), 0);
  EXPECT_EQ(h100.round(3), 8);    // raised to the minimum
  EXPECT_EQ(h100.round(23), 16);  // rounded down
  EXPECT_EQ(h100.round_up(17), 24);
  EXPECT_EQ(h100.round(500), 128);  // capped
  EXPECT_EQ(a100.round(2), 4);
  EXPECT_EQ(a100.round(7), 6);
  EXPECT_EQ(a100.round_up(7), 8);
}

TEST(PhysicalContexts, PlansDisjointAlignedPartitionsWithThePoolLeftOver) {
  const auto g = grid_of("h100");
  const std::vector<int> sms = {40, 0, 13, 60};
  const auto layout = plan_physical_contexts(g, sms);
  ASSERT_TRUE(layout) << layout.error().message();
  ASSERT_EQ(layout->partitions.size(), 4u);
  EXPECT_EQ(layout->partitions[0], device::SmMask::range(0, 40));
  EXPECT_TRUE(layout->partitions[1].empty());
  EXPECT_EQ(layout->partitions[2], device::SmMask::range(40, 48));
  EXPECT_EQ(layout->partitions[3], device::SmMask::range(48, 104));
  EXPECT_EQ(layout->pool, device::SmMask::range(104, 132));
  expect_well_formed(g, *layout);
  // Same input, same output.
  EXPECT_EQ(plan_physical_contexts(g, sms)->partitions, layout->partitions);
}

TEST(PhysicalContexts, RespectsAmpereGranularityOverManySizes) {
  const auto g = grid_of("a100-40gb");
  for (int a = 0; a <= 108; a += 7) {
    for (int b = 0; a + b <= 100; b += 5) {
      const std::vector<int> sms = {a, b, 3};
      const auto layout = plan_physical_contexts(g, sms);
      if (g.round(a) + g.round(b) + g.round(3) > g.usable_sms) {
        EXPECT_FALSE(layout);
        continue;
      }
      ASSERT_TRUE(layout) << a << " " << b << ": " << layout.error().message();
      EXPECT_EQ(layout->partitions[2].count(), 4);
      expect_well_formed(g, *layout);
    }
  }
}

TEST(PhysicalContexts, ErrorsNameTheTenantsAndTheLimit) {
  const auto g = grid_of("h100");
  const std::vector<std::string> names = {"chat", "train"};
  const std::vector<int> over = {100, 40};
  const auto too_many = plan_physical_contexts(g, over, names);
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().code(), core::Code::kResourceExhausted);
  EXPECT_THAT(too_many.error().message(), HasSubstr("'chat' 96 + 'train' 40 = 136 SMs"));
  EXPECT_THAT(too_many.error().message(), HasSubstr("128 usable SMs"));

  const std::vector<int> negative = {8, -1};
  const auto bad = plan_physical_contexts(g, negative, names);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("tenant 'train' asks for -1 SMs"));
}

TEST(PartitionGrid, RejectsASpecWithoutAUsableGranularity) {
  auto spec = test::TestGpu().name("odd").build();
  spec.green_ctx_sm_granularity = 4;
  spec.green_ctx_min_sms = 6;  // not a multiple of 4
  const auto grid = PartitionGrid::of(spec);
  ASSERT_FALSE(grid);
  EXPECT_THAT(grid.error().message(), HasSubstr("GPU 'odd'"));
  spec.green_ctx_sm_granularity = 0;
  EXPECT_FALSE(PartitionGrid::of(spec));
}

}  // namespace
}  // namespace tessera::gpu
