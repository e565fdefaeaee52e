// The compute models' shared data (compute_data.hpp) and step sequences (compute_steps.hpp): the
// facts the CUDA models and the host reference both rely on.

#include "tessera/workload/models/compute_data.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "tessera/workload/models/compute_steps.hpp"

namespace tessera::workload {
namespace {

namespace cd = compute_data;
namespace cs = compute_steps;

TEST(ComputeData, Fp16DecodesKnownBitPatterns) {
  EXPECT_EQ(cd::fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(cd::fp16_to_float(0xbc00), -1.0f);
  EXPECT_EQ(cd::fp16_to_float(0x3800), 0.5f);
  EXPECT_EQ(cd::fp16_to_float(0x7bff), 65504.0f);               // largest finite
  EXPECT_EQ(cd::fp16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(cd::fp16_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_TRUE(std::isinf(cd::fp16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(cd::fp16_to_float(0x7e00)));
  EXPECT_TRUE(std::signbit(cd::fp16_to_float(0x8000)));
}

TEST(ComputeData, Fp16RoundTripsEveryFiniteValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if ((bits & 0x7c00u) == 0x7c00u) continue;  // inf and NaN
    ASSERT_EQ(cd::float_to_fp16(cd::fp16_to_float(bits)), bits) << std::hex << h;
  }
}

TEST(ComputeData, Fp16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
  EXPECT_EQ(cd::float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(cd::float_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(cd::float_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(cd::float_to_fp16(65520.0f), 0x7c00);  // the tie above the largest finite: inf
  EXPECT_EQ(cd::float_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(cd::float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(cd::float_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(cd::float_to_fp16(-2.0f), 0xc000);
}

TEST(ComputeData, GeneratorIsSplitMix64) {
  // Vigna's splitmix64.c from state 0: the first output is 0xe220a8397b1dcdaf.
  cd::SplitMix64 s(0);
  EXPECT_EQ(s.next(), 0xe220a8397b1dcdafULL);
}

TEST(ComputeData, ValuesAreExactFp16InMinusOneToOne) {
  const auto v = cd::generate_fp16(42, cd::Tensor::kDecodeLmHead, 100000);
  std::set<std::uint16_t> distinct;
  for (std::uint16_t bits : v) {
    const float f = cd::fp16_to_float(bits);
    ASSERT_GE(f, -1.0f);
    ASSERT_LT(f, 1.0f);
    // A multiple of 2^-11: (k - 2048) / 2048 for an integer k.
    const float k = f * 2048.0f;
    ASSERT_EQ(k, std::floor(k));
    distinct.insert(bits);
  }
  EXPECT_GT(distinct.size(), 4000u);  // nearly all of the 4096 values appear
}

TEST(ComputeData, SameSeedSameBitsAndTensorsDiffer) {
  const auto a = cd::generate_fp16(7, cd::Tensor::kDecodeEmbedding, 4096);
  EXPECT_EQ(a, cd::generate_fp16(7, cd::Tensor::kDecodeEmbedding, 4096));
  EXPECT_NE(a, cd::generate_fp16(8, cd::Tensor::kDecodeEmbedding, 4096));
  EXPECT_NE(a, cd::generate_fp16(7, cd::Tensor::kDecodeLmHead, 4096));
  // A prefix does not depend on how much is generated.
  const auto longer = cd::generate_fp16(7, cd::Tensor::kDecodeEmbedding, 8192);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), longer.begin()));
}

TEST(ComputeData, Fnv1aMatchesTheReferenceVectors) {
  // FNV-1a 64 test vectors (Fowler, Noll, Vo, draft-eastlake-fnv): "" and "a".
  EXPECT_EQ(cd::fnv1a64({}), 0xcbf29ce484222325ULL);
  const std::array<std::byte, 1> a = {std::byte{'a'}};
  EXPECT_EQ(cd::fnv1a64(a), 0xaf63dc4c8601ec8cULL);
}

TEST(ComputeData, ChecksumIsFnvOverChunkHashes) {
  std::vector<std::byte> bytes(2500);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 37 + 11);
  const std::span<const std::byte> all(bytes);
  ASSERT_EQ(cd::checksum_chunks(bytes.size()), 3u);
  std::vector<std::byte> level2;
  for (std::size_t off = 0; off < bytes.size(); off += cd::kChecksumChunkBytes) {
    const std::uint64_t h =
        cd::fnv1a64(all.subspan(off, std::min(cd::kChecksumChunkBytes, bytes.size() - off)));
    for (int i = 0; i < 8; ++i) level2.push_back(static_cast<std::byte>((h >> (8 * i)) & 0xff));
  }
  EXPECT_EQ(cd::checksum(all), cd::fnv1a64(level2));
  EXPECT_EQ(cd::checksum({}), cd::kFnvOffset);
  // One flipped bit anywhere changes it.
  bytes[2100] ^= std::byte{1};
  EXPECT_NE(cd::checksum(std::span<const std::byte>(bytes)), cd::fnv1a64(level2));
}

const Kernel& kernel(const KernelSequence& seq, std::size_t i) {
  return seq.groups.at(0).kernels.at(i);
}

TEST(ComputeSteps, DecodeStepHasTheFourKernelsInOrder) {
  const cd::DecodeShape shape;  // B 4, H 1024, V 32000
  const auto seq = cs::decode_step_sequence(shape);
  ASSERT_EQ(seq->groups.size(), 1u);
  ASSERT_EQ(seq->groups[0].kernels.size(), 4u);
  EXPECT_EQ(seq->groups[0].repeat, 1);
  EXPECT_EQ(seq->phase, Phase::kDecode);
  const std::array<std::string_view, 4> names = {"decode.embed", "decode.lm_head", "decode.softmax",
                                                 "decode.argmax"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(kernel(*seq, i).name, names[i]);
    EXPECT_FALSE(kernel(*seq, i).block_independent) << names[i];
  }
  // workload::Kernel keeps only a view of its name: the comparisons above read it, so a view of
  // anything but the library's static literals is a use-after-free in the sanitizer build.
  EXPECT_EQ(kernel(*seq, 0).name, cs::kDecodeEmbed);
  // tessera's own kernels: a block of 256 threads per sequence.
  for (std::size_t i : {0u, 2u, 3u}) {
    EXPECT_EQ(kernel(*seq, i).blocks, 4);
    EXPECT_EQ(kernel(*seq, i).block.threads, cs::kThreadsPerBlock);
  }
  const Kernel& lm = kernel(*seq, 1);
  EXPECT_EQ(lm.kind, KernelClass::kGemm);
  EXPECT_EQ(lm.pipe, ComputePipe::kTensorFp16);
  EXPECT_DOUBLE_EQ(lm.total_flops(), 2.0 * 32000 * 1024 * 4);
  // Operands cross DRAM at least once: W (V x H fp16) dominates.
  EXPECT_GE(lm.total_bytes(), 32000.0 * 1024 * 2);
  EXPECT_DOUBLE_EQ(kernel(*seq, 0).total_bytes(), 4 * (2 * 1024 * 2 + 4));
}

TEST(ComputeSteps, DecodeStepFollowsTheShape) {
  const auto seq = cs::decode_step_sequence({.batch = 8, .hidden = 512, .vocab = 1000});
  EXPECT_EQ(kernel(*seq, 0).blocks, 8);
  EXPECT_EQ(kernel(*seq, 3).blocks, 8);
  EXPECT_DOUBLE_EQ(kernel(*seq, 1).total_flops(), 2.0 * 1000 * 512 * 8);
  EXPECT_DOUBLE_EQ(kernel(*seq, 3).total_flops(), 1000.0 * 8);
}

TEST(ComputeSteps, TrainStepHasGemmReduceUpdate) {
  const cd::TrainShape shape;  // 2048^3
  const auto seq = cs::train_step_sequence(shape);
  ASSERT_EQ(seq->groups.at(0).kernels.size(), 3u);
  EXPECT_EQ(seq->phase, Phase::kTraining);
  EXPECT_EQ(kernel(*seq, 0).name, "train.gemm");
  EXPECT_EQ(kernel(*seq, 1).name, "train.reduce");
  EXPECT_EQ(kernel(*seq, 2).name, "train.update");
  EXPECT_DOUBLE_EQ(kernel(*seq, 0).total_flops(), 2.0 * 2048 * 2048 * 2048);
  EXPECT_EQ(kernel(*seq, 1).blocks, 2048 / cs::kReduceRowsPerBlock);
  EXPECT_EQ(kernel(*seq, 2).blocks, 2048 * 2048 / cs::kThreadsPerBlock);
  const auto odd = cs::train_step_sequence({.m = 100, .n = 30, .k = 7});
  EXPECT_EQ(kernel(*odd, 1).blocks, 4);  // ceil(100 / 32)
  EXPECT_EQ(kernel(*odd, 2).blocks, 1);  // ceil(210 / 256)
}

}  // namespace
}  // namespace tessera::workload
