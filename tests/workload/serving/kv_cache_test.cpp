// The paged KV cache's block accounting and admission rules, and its vLLM-style sizing, worked
// out by hand.

#include "tessera/workload/serving/kv_cache.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::workload {
namespace {

using ::testing::HasSubstr;
using Admission = KvCache::Admission;

TEST(KvCache, SequencesHoldWholeBlocksAndGrowBlockByBlock) {
  KvCache c({.blocks = 10, .block_size = 4, .watermark = 0}, 2);
  EXPECT_EQ(c.admission(40), Admission::kNow);  // exactly the whole cache
  EXPECT_EQ(c.admission(41), Admission::kNever);
  c.allocate(0, 9);  // 3 blocks
  EXPECT_EQ(c.used_blocks(), 3);
  c.grow(0, 12);  // still 3
  EXPECT_EQ(c.used_blocks(), 3);
  c.grow(0, 13);  // a 4th
  EXPECT_EQ(c.used_blocks(), 4);
  EXPECT_EQ(c.admission(24), Admission::kNow);  // 6 blocks, 6 free
  EXPECT_EQ(c.admission(25), Admission::kLater);
  c.allocate(1, 24);
  EXPECT_FALSE(c.can_grow(0, 17));
  EXPECT_TRUE(c.can_grow(0, 16));
  c.free(1);
  EXPECT_EQ(c.used_blocks(), 4);
  EXPECT_EQ(c.peak_used_blocks(), 10);
  EXPECT_TRUE(c.can_grow(0, 17));
}

TEST(KvCache, AdmissionsLeaveTheWatermarkFree) {
  // 1% of 1000 blocks: 10 are kept for running sequences to grow into.
  KvCache c({.blocks = 1000, .block_size = 16, .watermark = 0.01}, 2);
  EXPECT_EQ(c.admission(990 * 16), Admission::kNow);
  EXPECT_EQ(c.admission(991 * 16), Admission::kNever);
  c.allocate(0, 16);
  EXPECT_EQ(c.admission(989 * 16), Admission::kNow);
  EXPECT_EQ(c.admission(990 * 16), Admission::kLater);
  // Growth may use the reserve: only admissions keep it.
  EXPECT_TRUE(c.can_grow(0, 1000 * 16));
}

TEST(KvCache, WithoutALimitEverythingFitsAndUseIsStillCounted) {
  KvCache c({}, 1);
  EXPECT_FALSE(c.limited());
  EXPECT_EQ(c.admission(1 << 30), Admission::kNow);
  c.allocate(0, 33);  // 3 blocks of 16
  EXPECT_TRUE(c.can_grow(0, 1 << 30));
  EXPECT_EQ(c.peak_used_blocks(), 3);
}

TEST(KvCache, RejectsOutOfRangeSettings) {
  EXPECT_THAT(validate(KvCacheConfig{.blocks = -1}).error().message(), HasSubstr("blocks (-1)"));
  EXPECT_THAT(validate(KvCacheConfig{.block_size = 0}).error().message(),
              HasSubstr("block_size 0"));
  EXPECT_THAT(validate(KvCacheConfig{.watermark = 1}).error().message(), HasSubstr("watermark 1"));
  EXPECT_TRUE(validate(KvCacheConfig{}));
}

TEST(KvCacheSizing, TheCacheGetsWhatWeightsAndActivationsLeave) {
  const auto m = find_model("llama-3-8b");
  ASSERT_TRUE(m);
  const std::int64_t gib = std::int64_t{1} << 30;
  const auto sized = size_kv_cache(*m, {}, 80 * gib, {}, 8192, 256);
  ASSERT_TRUE(sized) << sized.error().message();
  // Worked by hand: 0.9 * 80 GiB; activations 8192 * (2 * 4096 + 3 * 14336) * 2 bytes plus
  // 256 * 128256 * 4 bytes of logits; K and V of 32 layers, 8 heads of 128, 2 bytes each.
  EXPECT_DOUBLE_EQ(sized->budget, 72.0 * static_cast<double>(gib));
  EXPECT_DOUBLE_EQ(sized->activations, 8192.0 * (8192 + 43008) * 2 + 256.0 * 128256 * 4);
  EXPECT_DOUBLE_EQ(sized->kv_bytes_per_token, 2.0 * 32 * 8 * 128 * 2);
  const double left = sized->budget - sized->weights - sized->activations;
  EXPECT_EQ(sized->cache.blocks, static_cast<std::int64_t>(left / (131072.0 * 16)));
  EXPECT_EQ(sized->cache.block_size, 16);
  EXPECT_LE(sized->kv_cache, left);

  // Sharded over 2 GPUs, each holds half the weights and half the KV heads: more tokens fit.
  TensorParallel tp;
  tp.degree = 2;
  const auto sharded = size_kv_cache(*m, tp, 80 * gib, {}, 8192, 256);
  ASSERT_TRUE(sharded);
  EXPECT_DOUBLE_EQ(sharded->weights, sized->weights / 2);
  EXPECT_GT(sharded->cache.blocks, 2 * sized->cache.blocks);
}

TEST(KvCacheSizing, AModelThatDoesNotFitIsAnOutOfMemory) {
  const auto m = find_model("llama-3-70b");
  ASSERT_TRUE(m);
  const auto sized = size_kv_cache(*m, {}, std::int64_t{80} << 30, {}, 8192, 256);
  ASSERT_FALSE(sized);
  EXPECT_EQ(sized.error().code(), core::Code::kResourceExhausted);
  EXPECT_THAT(sized.error().message(), HasSubstr("out of memory: llama-3-70b needs"));
  KvCacheSizing bad;
  bad.gpu_memory_utilization = 1.5;
  EXPECT_THAT(size_kv_cache(*m, {}, 1, bad, 8192, 256).error().message(),
              HasSubstr("gpu_memory_utilization 1.5"));
}

}  // namespace
}  // namespace tessera::workload
