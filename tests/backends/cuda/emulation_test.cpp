// The mapping of a workload::Kernel onto tessera_emulate (emulation.hpp): every rule, rounding
// and refusal, and the shared-memory lever checked against the simulator's occupancy on every
// catalog GPU. Pure: no driver.

#include "tessera/backends/cuda/emulation.hpp"

#include <gtest/gtest.h>

#include "tessera/device/occupancy.hpp"

namespace tessera::cuda {
namespace {

hw::GpuSpec h100() {
  auto spec = hw::find_gpu("h100");
  EXPECT_TRUE(spec.has_value());
  return spec.value();
}

EmulationBuffers buffers() {
  EmulationBuffers b;
  b.scratch = 0x10000;
  b.scratch_bytes = 1 << 20;
  b.sink = 0x20000;
  b.yield_flag = 0x30000;
  b.progress = 0x40000;
  b.yielded_blocks = 0x50000;
  return b;
}

workload::Kernel kernel(int threads = 256, double flops = 0, double bytes = 0) {
  workload::Kernel k;
  k.name = "k";
  k.blocks = 20;
  k.block.threads = threads;
  k.block.registers_per_thread = 32;
  k.flops_per_block = flops;
  k.bytes_per_block = bytes;
  return k;
}

EmulationLaunch launch_of(const workload::Kernel& k, device::BlockRange r = {0, 20}) {
  auto l = emulation_launch(k, r, h100(), buffers());
  EXPECT_TRUE(l.has_value()) << l.error().message();
  return l.value_or(EmulationLaunch{});
}

std::string error_of(const workload::Kernel& k, device::BlockRange r = {0, 20},
                     const EmulationBuffers& b = buffers()) {
  auto l = emulation_launch(k, r, h100(), b);
  EXPECT_FALSE(l.has_value());
  if (l) return {};
  EXPECT_EQ(l.error().code(), core::Code::kInvalidArgument);
  EXPECT_EQ(l.error().domain(), core::Domain::kCuda);
  return l.error().message();
}

TEST(Emulation, RangeBecomesGridOffsetAndVirtualGrid) {
  const EmulationLaunch l = launch_of(kernel(), {3, 10});
  EXPECT_EQ(l.grid, 7u);
  EXPECT_EQ(l.block, 256u);
  EXPECT_EQ(l.params.block_offset, 3u);
  EXPECT_EQ(l.params.virtual_blocks, 20u);
  EXPECT_EQ(l.params.scratch, buffers().scratch);
  EXPECT_EQ(l.params.scratch_bytes, buffers().scratch_bytes);
  EXPECT_EQ(l.params.sink, buffers().sink);
  EXPECT_EQ(l.params.yield_flag, buffers().yield_flag);
  EXPECT_EQ(l.params.yielded_blocks, buffers().yielded_blocks);
}

TEST(Emulation, Fp32CountsTwoFlopsPerFmaPerThreadRoundedToNearest) {
  EXPECT_EQ(launch_of(kernel(256, 2.0 * 256 * 1000)).params.fma_per_thread, 1000u);
  EXPECT_EQ(launch_of(kernel(256, 2.0 * 256 * 1000.4)).params.fma_per_thread, 1000u);
  EXPECT_EQ(launch_of(kernel(256, 2.0 * 256 * 1000.5)).params.fma_per_thread, 1001u);
  EXPECT_EQ(launch_of(kernel(100, 2.0 * 100 * 7)).params.fma_per_thread, 7u);
  EXPECT_EQ(launch_of(kernel(256, 0)).params.fma_per_thread, 0u);
  EXPECT_EQ(launch_of(kernel(256, 1)).params.pipe, static_cast<std::uint32_t>(TESSERA_PIPE_FP32));
}

TEST(Emulation, TensorCountsMmasPerFullWarp) {
  constexpr double kMma = 2.0 * 16 * 16 * 16;
  auto k = kernel(128, kMma * 4 * 10);
  k.pipe = workload::ComputePipe::kTensorFp16;
  EmulationLaunch l = launch_of(k);
  EXPECT_EQ(l.params.pipe, static_cast<std::uint32_t>(TESSERA_PIPE_TENSOR_FP16));
  EXPECT_EQ(l.params.fma_per_thread, 10u);
  // 100 threads: 3 full warps do the work; the 4-thread remainder cannot issue an MMA.
  k.block.threads = 100;
  k.flops_per_block = kMma * 3 * 6;
  EXPECT_EQ(launch_of(k).params.fma_per_thread, 6u);
  k.flops_per_block = kMma * 3 * 6.6;
  EXPECT_EQ(launch_of(k).params.fma_per_thread, 7u);
}

TEST(Emulation, TensorWorkNeedsAFullWarp) {
  auto k = kernel(16, 8192);
  k.pipe = workload::ComputePipe::kTensorFp16;
  EXPECT_NE(error_of(k).find("at least 32 threads"), std::string::npos);
  k.flops_per_block = 0;
  EXPECT_EQ(launch_of(k).params.fma_per_thread, 0u);
}

TEST(Emulation, CountsAbove32BitsAreRefused) {
  EXPECT_NE(error_of(kernel(1, 2.0 * 5e9)).find("2^32 - 1 FMAs"), std::string::npos);
  auto k = kernel(32, 8192.0 * 5e9);
  k.pipe = workload::ComputePipe::kTensorFp16;
  EXPECT_NE(error_of(k).find("2^32 - 1 MMAs"), std::string::npos);
  EXPECT_EQ(launch_of(kernel(1, 2.0 * 4294967295.0)).params.fma_per_thread, 4294967295u);
}

TEST(Emulation, BytesRoundToWholeReadWritePairsOf32) {
  EXPECT_EQ(launch_of(kernel(256, 0, 4096)).params.bytes_per_block, 4096u);
  EXPECT_EQ(launch_of(kernel(256, 0, 1000)).params.bytes_per_block, 992u);   // 31.25 pairs
  EXPECT_EQ(launch_of(kernel(256, 0, 1008)).params.bytes_per_block, 1024u);  // 31.5 pairs
  EXPECT_EQ(launch_of(kernel(256, 0, 15)).params.bytes_per_block, 0u);
  // The kernel counts read vectors in 32 bits: 2^32 - 1 pairs is the most.
  const double most = 32.0 * 4294967295.0;
  EXPECT_EQ(launch_of(kernel(256, 0, most)).params.bytes_per_block, 137438953440u);
  EXPECT_NE(error_of(kernel(256, 0, most + 32)).find("above the 137438953440 a block can move"),
            std::string::npos);
}

TEST(Emulation, CheckpointsNeedProgressAndPassThrough) {
  auto k = kernel();
  k.checkpoints = 7;
  EmulationLaunch l = launch_of(k);
  EXPECT_EQ(l.params.checkpoints, 7u);
  EXPECT_EQ(l.params.progress, buffers().progress);
  EmulationBuffers b = buffers();
  b.progress = 0;
  EXPECT_NE(error_of(k, {0, 20}, b).find("no progress buffer; pass uint32[20]"), std::string::npos);
  k.checkpoints = 0;
  EXPECT_EQ(launch_of(k).params.progress, 0u);  // the kernel must not touch it
  k.checkpoints = -1;
  EXPECT_NE(error_of(k).find("-1 checkpoints"), std::string::npos);
}

TEST(Emulation, RefusesWhatCannotLaunch) {
  EXPECT_NE(error_of(kernel(0)).find("0 threads per block; a block has 1 to 1024"),
            std::string::npos);
  EXPECT_NE(error_of(kernel(1025)).find("1025 threads per block"), std::string::npos);
  auto k = kernel();
  k.block.shared_memory_bytes = 227 * 1024 + 1;
  EXPECT_NE(error_of(k).find("the GPU allows 0 to 232448 per block"), std::string::npos);
  k = kernel(1024);
  k.block.registers_per_thread = 128;  // 131072 registers per block: no SM holds one
  EXPECT_NE(error_of(k).find("fit no SM"), std::string::npos);
  EXPECT_NE(error_of(kernel(), {5, 5}).find("[5, 5) is empty"), std::string::npos);
  EXPECT_NE(error_of(kernel(), {-1, 3}).find("outside the grid [0, 20)"), std::string::npos);
  EXPECT_NE(error_of(kernel(), {10, 21}).find("outside the grid"), std::string::npos);
  k = kernel();
  k.blocks = std::int64_t{1} << 32;
  EXPECT_NE(error_of(k, {0, k.blocks}).find("above the launch limit"), std::string::npos);
  EXPECT_EQ(launch_of(k, {(std::int64_t{1} << 32) - 5, std::int64_t{1} << 32}).grid, 5u);
  EXPECT_NE(error_of(kernel(256, -1)).find("finite"), std::string::npos);
}

TEST(Emulation, RefusesMissingBuffers) {
  EmulationBuffers b = buffers();
  b.sink = 0;
  EXPECT_NE(error_of(kernel(), {0, 20}, b).find("no sink"), std::string::npos);
  b = buffers();
  b.scratch_bytes = 3 << 20;  // not a power of two
  EXPECT_NE(error_of(kernel(256, 0, 64), {0, 20}, b).find("a power of two, at least 16"),
            std::string::npos);
  b.scratch_bytes = 8;
  EXPECT_NE(error_of(kernel(256, 0, 64), {0, 20}, b).find("a power of two, at least 16"),
            std::string::npos);
  b.scratch = 0;
  b.scratch_bytes = 0;
  EXPECT_TRUE(emulation_launch(kernel(256, 1e6, 0), {0, 20}, h100(), b).has_value())
      << "a kernel that moves no bytes needs no scratch";
}

TEST(Emulation, SharedMemoryRaisedToTheSimulatorsOccupancy) {
  // 256 threads x 64 registers: the simulator holds 4 blocks per SM (registers); the launch shape
  // alone would let 8 in, so shared memory must keep out the fifth.
  auto k = kernel();
  k.block.registers_per_thread = 64;
  const EmulationLaunch l = launch_of(k);
  EXPECT_EQ(l.blocks_per_sm, 4);
  const std::int64_t sm_shared = 228 * 1024;
  EXPECT_EQ(l.shared_bytes, sm_shared / 5 + 1 - kReservedSharedBytesPerBlock);
  EXPECT_EQ(sm_shared / (l.shared_bytes + kReservedSharedBytesPerBlock), 4);
  EXPECT_EQ(sm_shared / (l.shared_bytes - 1 + kReservedSharedBytesPerBlock), 5) << "not minimal";
}

TEST(Emulation, SharedMemoryKeptWhenShapeOrOwnFootprintAlreadyLimits) {
  auto k = kernel(1024);  // 2 blocks of 1024 threads fill an SM's 2048 threads
  EXPECT_EQ(launch_of(k).blocks_per_sm, 2);
  EXPECT_EQ(launch_of(k).shared_bytes, 0u);
  k = kernel(128);
  k.block.shared_memory_bytes = 100 * 1024;  // two per SM by its own shared memory
  EXPECT_EQ(launch_of(k).blocks_per_sm, 2);
  EXPECT_EQ(launch_of(k).shared_bytes, 100u * 1024);
}

// On every catalog GPU and a spread of block shapes, shared memory (with the 1 KiB reserve) and
// the SM's block and thread limits never admit more blocks than the simulator's occupancy, and
// shared memory is raised only when that was needed.
TEST(Emulation, ResidencyNeverExceedsSimulatedOccupancyOnAnyCatalogGpu) {
  for (const hw::GpuSpec& spec : hw::gpu_catalog()) {
    for (int threads : {32, 64, 96, 128, 256, 384, 512, 768, 1024}) {
      for (int regs : {16, 32, 40, 64, 96, 128, 255}) {
        for (std::int64_t smem : {0, 1024, 8 * 1024, 40 * 1024, 90 * 1024}) {
          workload::Kernel k = kernel(threads);
          k.block.registers_per_thread = regs;
          k.block.shared_memory_bytes = smem;
          const int occ = device::blocks_per_sm(spec.sm, k.block);
          auto l = emulation_launch(k, {0, 20}, spec, buffers());
          if (occ < 1) {
            EXPECT_FALSE(l.has_value());
            continue;
          }
          ASSERT_TRUE(l.has_value()) << spec.name << " " << l.error().message();
          const std::int64_t s = l->shared_bytes;
          const auto resident = [&](std::int64_t bytes) {
            return std::min<std::int64_t>(
                {spec.sm.max_blocks, spec.sm.max_threads / threads,
                 spec.sm.shared_memory_bytes / (bytes + kReservedSharedBytesPerBlock)});
          };
          SCOPED_TRACE(::testing::Message() << spec.name << " threads " << threads << " regs "
                                            << regs << " smem " << smem);
          EXPECT_LE(resident(s), occ);
          EXPECT_GE(s, smem);
          EXPECT_LE(s, spec.sm.max_shared_memory_per_block_bytes);
          if (s > smem) {
            EXPECT_GT(resident(s - 1), occ) << "raised further than needed";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cuda
