#include "tessera/device/occupancy.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"

namespace tessera::device {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const hw::SmLimits kLimits = test::TestGpu().build().sm;  // 2048 threads, 32 blocks, 64K regs,
                                                          // 100 KiB smem per SM

TEST(BlocksPerSm, EachLimitCanBeTheBindingOne) {
  // Threads: 2048 / 512 = 4 (registers allow 65536 / (16 x 512) = 8).
  EXPECT_EQ(blocks_per_sm(kLimits, {.threads = 512, .registers_per_thread = 16}), 4);
  // Registers: 65536 / (128 x 128) = 4 (threads allow 16).
  EXPECT_EQ(blocks_per_sm(kLimits, {.threads = 128, .registers_per_thread = 128}), 4);
  // Shared memory: 100 KiB / 30 KiB = 3.
  EXPECT_EQ(
      blocks_per_sm(kLimits,
                    {.threads = 128, .registers_per_thread = 16, .shared_memory_bytes = 30 * 1024}),
      3);
  // Resident block limit: 32 even though 64-thread blocks would allow 32 and registers 64.
  EXPECT_EQ(blocks_per_sm(kLimits, {.threads = 32, .registers_per_thread = 16}), 32);
  EXPECT_EQ(blocks_per_sm(kLimits, {.threads = 0, .registers_per_thread = 16}), 0);
}

TEST(BlocksPerSm, TestHelperGivesTheRequestedOccupancy) {
  for (int bps : {1, 2, 4, 8}) EXPECT_EQ(blocks_per_sm(kLimits, test::block_for_bps(bps)), bps);
}

class ValidateKernel : public ::testing::Test {
 protected:
  hw::GpuSpec spec = test::TestGpu().build();
  workload::Kernel k = test::make_kernel("gemm_qkv", 64, 1e6, 1e3);

  std::string error() {
    auto st = validate_kernel(spec, k);
    return st ? std::string{} : st.error().message();
  }
};

TEST_F(ValidateKernel, AcceptsAKernelWithinLimits) {
  EXPECT_EQ(error(), "");
}

TEST_F(ValidateKernel, RejectsAnEmptyGrid) {
  k.blocks = 0;
  EXPECT_THAT(error(), AllOf(HasSubstr("'gemm_qkv'"), HasSubstr("0 blocks")));
}

TEST_F(ValidateKernel, RejectsTooManyThreadsPerBlock) {
  k.block.threads = 2048;
  k.block.registers_per_thread = 16;
  EXPECT_THAT(error(), AllOf(HasSubstr("2048 threads per block"), HasSubstr("limit of 1024")));
}

TEST_F(ValidateKernel, RejectsTooManyRegistersPerThread) {
  k.block.registers_per_thread = 300;
  EXPECT_THAT(error(), AllOf(HasSubstr("300 registers per thread"), HasSubstr("limit of 255")));
}

TEST_F(ValidateKernel, RejectsABlockNeedingMoreRegistersThanAnSmHas) {
  k.block.threads = 1024;
  k.block.registers_per_thread = 128;
  EXPECT_THAT(error(), AllOf(HasSubstr("131072 registers per block"), HasSubstr("65536")));
}

TEST_F(ValidateKernel, RejectsTooMuchSharedMemoryPerBlock) {
  k.block.shared_memory_bytes = 97 * 1024;
  EXPECT_THAT(error(), AllOf(HasSubstr("shared memory per block"), HasSubstr("98304")));
}

TEST_F(ValidateKernel, RejectsNegativeOrNonFiniteCosts) {
  k.flops_per_block = -1;
  EXPECT_THAT(error(), HasSubstr("FLOPs per block"));
  k.flops_per_block = 1;
  k.bytes_per_block = std::numeric_limits<double>::infinity();
  EXPECT_THAT(error(), HasSubstr("bytes per block"));
}

TEST_F(ValidateKernel, RejectsWorkOnAPipeTheGpuLacks) {
  spec.peak_fp16_tensor_flops = 0;
  k.pipe = workload::ComputePipe::kTensorFp16;
  EXPECT_THAT(error(), HasSubstr("no peak tensor FP16 throughput"));
}

TEST(ValidateSequence, RejectsAnEmptySequenceAndZeroRepeats) {
  const auto spec = test::TestGpu().build();
  workload::KernelSequence empty;
  auto st = validate_sequence(spec, empty);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("no kernels"));

  workload::KernelSequence zero;
  zero.groups.push_back({.kernels = {test::make_kernel("k", 1, 1, 1)}, .repeat = 0});
  st = validate_sequence(spec, zero);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("group 0 repeats 0 times"));
}

TEST(ValidateSequence, NamesTheOffendingKernelsPosition) {
  const auto spec = test::TestGpu().build();
  workload::KernelSequence seq;
  auto bad = test::make_kernel("bad_norm", 1, 1, 1);
  bad.block.threads = 4096;
  seq.groups.push_back({.kernels = {test::make_kernel("ok", 1, 1, 1)}, .repeat = 3});
  seq.groups.push_back({.kernels = {test::make_kernel("ok", 1, 1, 1), bad}, .repeat = 1});
  const auto st = validate_sequence(spec, seq);
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), AllOf(HasSubstr("group 1, kernel 1: kernel 'bad_norm'"),
                                          HasSubstr("4096 threads per block")));
}

}  // namespace
}  // namespace tessera::device
