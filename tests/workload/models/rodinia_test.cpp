#include "tessera/workload/models/rodinia.hpp"

#include <gtest/gtest.h>

#include "tessera/device/occupancy.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::workload {
namespace {

TEST(RodiniaTest, CatalogHasTheEightKernels) {
  std::vector<std::string> names;
  for (const auto& k : rodinia_catalog()) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"hotspot", "srad", "pathfinder", "lud", "bfs",
                                             "kmeans", "backprop", "nw"}));
}

TEST(RodiniaTest, FindIsCaseInsensitiveAndListsTheNames) {
  auto k = find_rodinia("HotSpot");
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->name, "hotspot");
  auto missing = find_rodinia("myocyte");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("myocyte"), std::string::npos);
  EXPECT_NE(missing.error().message().find("pathfinder"), std::string::npos);
}

// Every sequence a kernel builds, at its smallest, default and a large size, launches on A100 and
// H100.
TEST(RodiniaTest, EverySequenceValidatesOnA100AndH100) {
  for (const char* gpu : {"a100-40gb", "h100"}) {
    const auto spec = hw::find_gpu(gpu);
    ASSERT_TRUE(spec.has_value());
    for (const auto& k : rodinia_catalog()) {
      for (std::int64_t size : {k.min_size, k.default_size, 2 * k.default_size}) {
        const KernelSequence seq = k.iteration(size);
        const auto ok = device::validate_sequence(*spec, seq);
        EXPECT_TRUE(ok.has_value())
            << gpu << " " << k.name << " size " << size << ": " << (ok ? "" : ok.error().message());
        EXPECT_GT(seq.total_flops(), 0) << k.name;
        EXPECT_GT(seq.total_bytes(), 0) << k.name;
      }
    }
  }
}

TEST(RodiniaTest, WorkAndFootprintGrowWithSize) {
  for (const auto& k : rodinia_catalog()) {
    const auto small = k.iteration(k.default_size);
    const auto large = k.iteration(4 * k.default_size);
    EXPECT_GT(large.total_bytes(), small.total_bytes()) << k.name;
    EXPECT_GT(k.footprint_bytes(4 * k.default_size), k.footprint_bytes(k.default_size)) << k.name;
    EXPECT_EQ(k.footprint_bytes(0), k.footprint_bytes(k.min_size)) << k.name;
  }
}

TEST(RodiniaTest, FootprintsAreTheCudaAllocations) {
  // hotspot: three N x N float arrays; srad: six; lud: one; nw: two (N + 1)^2 int matrices.
  EXPECT_EQ(find_rodinia("hotspot")->footprint_bytes(1024), 3LL * 1024 * 1024 * 4);
  EXPECT_EQ(find_rodinia("srad")->footprint_bytes(1024), 6LL * 1024 * 1024 * 4);
  EXPECT_EQ(find_rodinia("lud")->footprint_bytes(1024), 1024LL * 1024 * 4);
  EXPECT_EQ(find_rodinia("nw")->footprint_bytes(1024), 2LL * 1025 * 1025 * 4);
  // pathfinder: (rows - 1) x cols wall plus two result rows, 100 rows.
  EXPECT_EQ(find_rodinia("pathfinder")->footprint_bytes(1000), 101LL * 1000 * 4);
  // bfs: 39 bytes a node at mean degree 6.
  EXPECT_EQ(find_rodinia("bfs")->footprint_bytes(1000), 39LL * 1000);
}

TEST(RodiniaTest, LudDiagonalRunsAloneAndStepsShrink) {
  const KernelSequence seq = find_rodinia("lud")->iteration(64);  // 4 x 4 tiles
  ASSERT_EQ(seq.groups.size(), 1U);
  const auto& ks = seq.groups[0].kernels;
  // Steps 0..2: diagonal, perimeter, internal; step 3: the diagonal alone.
  ASSERT_EQ(ks.size(), 10U);
  EXPECT_EQ(ks[0].name, "lud_diagonal");
  EXPECT_FALSE(ks[0].block_independent);
  EXPECT_EQ(ks[1].blocks, 3);
  EXPECT_EQ(ks[2].blocks, 9);
  EXPECT_EQ(ks[5].blocks, 4);
  EXPECT_EQ(ks[8].blocks, 1);
  EXPECT_EQ(ks[9].name, "lud_diagonal");
  EXPECT_TRUE(ks[2].block_independent);
}

TEST(RodiniaTest, NwWalksAntiDiagonalsUpAndDown) {
  const KernelSequence seq = find_rodinia("nw")->iteration(48);  // 3 x 3 tiles
  const auto& ks = seq.groups[0].kernels;
  ASSERT_EQ(ks.size(), 5U);
  std::vector<std::int64_t> blocks;
  for (const auto& k : ks) blocks.push_back(k.blocks);
  EXPECT_EQ(blocks, (std::vector<std::int64_t>{1, 2, 3, 2, 1}));
}

TEST(RodiniaTest, HotspotGridCoversTheInnerTiles) {
  // 14 x 14 inner cells per 16 x 16 block: a 140-cell side is 10 x 10 blocks.
  const KernelSequence seq = find_rodinia("hotspot")->iteration(140);
  EXPECT_EQ(seq.groups[0].kernels[0].blocks, 100);
  EXPECT_DOUBLE_EQ(seq.total_bytes(), 100 * 14 * 14 * 12.0);
}

}  // namespace
}  // namespace tessera::workload
