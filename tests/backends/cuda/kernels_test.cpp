// tessera's own kernels (kernels/tessera_kernels.cu). On the fake: the launch plumbing (block
// ranges, the shared-memory attributes emulation needs). RealGpuKernels: the kernels themselves
// on a GPU (skipped here; scripts/device-check.sh runs them): range_dot's atoms are bitwise equal
// to the whole launch, tessera_emulate yields on a control-channel request and resumes exactly,
// both pipes run, and the control kernel's acknowledgements carry increasing GPU times.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "kernel_session.hpp"
#include "support/cuda_test_env.hpp"
#include "tessera/backends/cuda/control_channel.hpp"
#include "tessera/backends/cuda/emulation.hpp"
#include "tessera/backends/cuda/kernel_params.h"

namespace tessera::cuda {
namespace {

using nlohmann::json;
using testing::FakeCuda;
using testing::KernelSession;

#define ASSERT_OK(expr)                                    \
  do {                                                     \
    auto&& ok_ = (expr);                                   \
    ASSERT_TRUE(ok_.has_value()) << ok_.error().message(); \
  } while (0)

// x: blocks x per_block values, w: per_block values, seeded.
struct DotInput {
  std::vector<float> x, w;
};
DotInput dot_input(std::uint64_t blocks, std::uint32_t per_block) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  DotInput in;
  in.x.resize(blocks * per_block);
  in.w.resize(per_block);
  for (float& v : in.x) v = d(rng);
  for (float& v : in.w) v = d(rng);
  return in;
}

// Runs range_dot over `ranges` (each [begin, end) on stream i % streams) and returns out.
core::Result<std::vector<float>> range_dot(
    KernelSession& s, const DotInput& in, std::uint64_t blocks, std::uint32_t per_block,
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, int streams) {
  TESSERA_ASSIGN_OR_RETURN(CUdeviceptr x, s.alloc(in.x.size() * 4));
  TESSERA_ASSIGN_OR_RETURN(CUdeviceptr w, s.alloc(in.w.size() * 4));
  TESSERA_ASSIGN_OR_RETURN(CUdeviceptr out, s.alloc(blocks * 4));
  TESSERA_TRY(s.write(x, in.x));
  TESSERA_TRY(s.write(w, in.w));
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    TesseraRangeDotParams p{};
    p.block_offset = ranges[i].first;
    p.virtual_blocks = blocks;
    p.x = x;
    p.w = w;
    p.out = out;
    p.per_block = per_block;
    TESSERA_TRY(s.module().launch(TESSERA_KERNEL_RANGE_DOT,
                                  static_cast<unsigned>(ranges[i].second - ranges[i].first), 256, 0,
                                  s.stream(static_cast<int>(i) % streams), p));
  }
  for (int i = 0; i < streams; ++i) TESSERA_TRY(s.sync(i));
  return s.read<float>(out, blocks);
}

TEST(Kernels, RangeDotAtomsRunTheirOwnBlocksOnTheFake) {
  FakeCuda fake;
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  auto session = KernelSession::open(*driver, 3);
  ASSERT_OK(session);
  const DotInput in = dot_input(10, 33);
  auto whole = range_dot(**session, in, 10, 33, {{0, 10}}, 1);
  auto atoms = range_dot(**session, in, 10, 33, {{0, 2}, {2, 7}, {7, 10}}, 3);
  ASSERT_OK(whole);
  ASSERT_OK(atoms);
  EXPECT_EQ(*whole, *atoms);
  std::vector<json> launches;
  const json log = fake.log();  // a range-for over log().at(...) would outlive the temporary
  for (const json& op : log.at("ops")) {
    if (op.contains("kernel") && op.at("kernel").get<std::string>() == TESSERA_KERNEL_RANGE_DOT) {
      launches.push_back(op);
    }
  }
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_EQ(launches[2].at("grid"), json({5, 1, 1}));
}

TEST(Kernels, EmulationSharedMemoryAttributesAreSet) {
  FakeCuda fake;
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  auto session = KernelSession::open(*driver, 1);
  ASSERT_OK(session);
  ASSERT_OK(allow_emulation_shared_memory(*driver, (*session)->module(), (*session)->device()));
  int max_dynamic = 0;
  auto k = (*session)->module().kernel(TESSERA_KERNEL_EMULATE);
  ASSERT_OK(k);
  ASSERT_EQ(
      driver->api().kernel_get_attribute(
          &max_dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, *k, (*session)->device()),
      CUDA_SUCCESS);
  EXPECT_GT(max_dynamic, 48 * 1024) << "above the default, so large-footprint kernels launch";
  const json calls = fake.log().at("calls");
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(),
                          [](const json& c) {
                            return c.at("call") == "cuKernelSetAttribute" && c.at("ret") == 0;
                          }),
            2)
      << "the dynamic shared-memory limit and the carveout";
}

// ---- On a GPU ------------------------------------------------------------------------------

TEST(RealGpuKernels, RangeDotAtomsOnThreeStreamsAreBitwiseEqualToTheWholeLaunch) {
  REAL_GPU_OR_SKIP(driver);
  auto session = KernelSession::open(*driver, 3);
  ASSERT_OK(session);
  constexpr std::uint64_t kBlocks = 1000;
  constexpr std::uint32_t kPerBlock = 4099;  // not a multiple of the block size
  const DotInput in = dot_input(kBlocks, kPerBlock);
  auto whole = range_dot(**session, in, kBlocks, kPerBlock, {{0, kBlocks}}, 1);
  auto atoms =
      range_dot(**session, in, kBlocks, kPerBlock, {{0, 123}, {123, 700}, {700, kBlocks}}, 3);
  ASSERT_OK(whole);
  ASSERT_OK(atoms);
  ASSERT_EQ(whole->size(), kBlocks);
  EXPECT_EQ(std::memcmp(whole->data(), atoms->data(), kBlocks * sizeof(float)), 0);
  for (std::uint64_t b = 0; b < kBlocks; b += 97) {  // and it is the dot product
    double ref = 0;
    for (std::uint32_t i = 0; i < kPerBlock; ++i) {
      ref += static_cast<double>(in.x[b * kPerBlock + i]) * in.w[i];
    }
    EXPECT_NEAR((*whole)[b], ref, 1e-3) << "block " << b;
  }
}

TEST(RealGpuKernels, ControlKernelAcknowledgesWithIncreasingGpuTimes) {
  REAL_GPU_OR_SKIP(driver);
  auto session = KernelSession::open(*driver, 1);
  ASSERT_OK(session);
  auto channel = ControlChannel::start(*driver, (*session)->module(), (*session)->stream(0));
  ASSERT_OK(channel);
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto seq = i % 2 == 0 ? (*channel)->request_yield(i) : (*channel)->clear(i);
    ASSERT_OK(seq);
    ASSERT_OK((*channel)->wait_acknowledged(*seq, core::seconds(1)));
    EXPECT_TRUE((*channel)->acknowledged(*seq));
    const std::uint64_t t = (*channel)->last_ack_gpu_time_ns();
    EXPECT_GT(t, last) << "command " << *seq;
    last = t;
  }
  auto flags = (*session)->read<std::uint32_t>((*channel)->yield_flag(0), 5);
  ASSERT_OK(flags);
  EXPECT_EQ(*flags, (std::vector<std::uint32_t>{1, 0, 1, 0, 1}));
}

// A persistent FP32 kernel filling the GPU (one wave), long enough (tens of ms) that a request
// lands while it runs.
struct Persistent {
  workload::Kernel kernel;
  EmulationBuffers buffers;
  EmulationLaunch launch;
};
// Its buffers are allocated before the control channel starts: an allocation or free while a
// resident kernel runs may wait for it (CUDA C++ Programming Guide, "Implicit Synchronization").
// The yield flag is set once the channel exists (set_flag).
core::Result<Persistent> persistent(KernelSession& s, int sms, int checkpoints) {
  Persistent p;
  p.kernel.name = "persistent";
  p.kernel.blocks = 4 * sms;  // 256 threads x 64 registers: 4 per SM
  p.kernel.block.threads = 256;
  p.kernel.block.registers_per_thread = 64;
  p.kernel.flops_per_block = 2.0 * 256 * 8e6;
  p.kernel.bytes_per_block = 1 << 20;
  p.kernel.checkpoints = checkpoints;
  constexpr std::uint64_t kScratch = std::uint64_t{256} << 20;
  TESSERA_ASSIGN_OR_RETURN(p.buffers.scratch, s.alloc(kScratch));
  p.buffers.scratch_bytes = kScratch;
  TESSERA_ASSIGN_OR_RETURN(p.buffers.sink, s.alloc(4));
  TESSERA_ASSIGN_OR_RETURN(p.buffers.progress, s.alloc(4 * p.kernel.blocks));
  TESSERA_ASSIGN_OR_RETURN(p.buffers.yielded_blocks, s.alloc(4));
  p.buffers.yield_flag = 0;
  TESSERA_ASSIGN_OR_RETURN(auto spec, hw::find_gpu("h100"));
  TESSERA_ASSIGN_OR_RETURN(p.launch,
                           emulation_launch(p.kernel, {0, p.kernel.blocks}, spec, p.buffers));
  return p;
}

TEST(RealGpuKernels, EmulateYieldsOnRequestAndARelaunchResumesEveryBlock) {
  REAL_GPU_OR_SKIP(driver);
  auto session = KernelSession::open(*driver, 2);
  ASSERT_OK(session);
  KernelSession& s = **session;
  int sms = 0;
  ASSERT_EQ(driver->api().device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                               s.device()),
            CUDA_SUCCESS);
  ASSERT_OK(allow_emulation_shared_memory(*driver, s.module(), s.device()));
  constexpr std::uint32_t kCheckpoints = 1000;
  auto p = persistent(s, sms, kCheckpoints);
  ASSERT_OK(p);
  // The control kernel first, so that the persistent kernel fills what is left.
  auto channel = ControlChannel::start(*driver, s.module(), s.stream(0));
  ASSERT_OK(channel);
  ControlChannel& ch = **channel;
  p->launch.params.yield_flag = ch.yield_flag(0);
  const auto blocks = static_cast<std::size_t>(p->kernel.blocks);
  const auto run = [&]() -> core::Status {
    TESSERA_TRY(s.write<std::uint32_t>(p->buffers.yielded_blocks, {0}));
    return s.module().launch(TESSERA_KERNEL_EMULATE, p->launch.grid, p->launch.block,
                             p->launch.shared_bytes, s.stream(1), p->launch.params);
  };
  const auto read = [&](CUdeviceptr ptr, std::size_t n) {
    return s.read<std::uint32_t>(ptr, n).value_or(std::vector<std::uint32_t>{});
  };

  // Raised before the launch: every block does its first chunk and stops at checkpoint 1.
  auto y = ch.request_yield(0);
  ASSERT_OK(y);
  ASSERT_OK(ch.wait_acknowledged(*y, core::seconds(1)));
  ASSERT_OK(run());
  ASSERT_OK(s.sync(1));
  EXPECT_EQ(read(p->buffers.progress, blocks), std::vector<std::uint32_t>(blocks, 1u));
  EXPECT_EQ(read(p->buffers.yielded_blocks, 1).at(0), blocks);

  // Cleared: the relaunch finishes every block from where it stopped.
  auto c = ch.clear(0);
  ASSERT_OK(c);
  ASSERT_OK(ch.wait_acknowledged(*c, core::seconds(1)));
  ASSERT_OK(run());
  ASSERT_OK(s.sync(1));
  EXPECT_EQ(read(p->buffers.progress, blocks),
            std::vector<std::uint32_t>(blocks, kCheckpoints + 1));
  EXPECT_EQ(read(p->buffers.yielded_blocks, 1).at(0), 0u);

  // Raised while it runs: blocks stop part-way; the cleared relaunch completes them.
  ASSERT_OK(s.write(p->buffers.progress, std::vector<std::uint32_t>(blocks, 0u)));
  ASSERT_OK(run());
  y = ch.request_yield(0);
  ASSERT_OK(y);
  ASSERT_OK(ch.wait_acknowledged(*y, core::seconds(1)));
  ASSERT_OK(s.sync(1));
  const auto partial = read(p->buffers.progress, blocks);
  EXPECT_GT(read(p->buffers.yielded_blocks, 1).at(0), 0u);
  EXPECT_LT(*std::min_element(partial.begin(), partial.end()), kCheckpoints + 1);
  c = ch.clear(0);
  ASSERT_OK(c);
  ASSERT_OK(ch.wait_acknowledged(*c, core::seconds(1)));
  ASSERT_OK(run());
  ASSERT_OK(s.sync(1));
  EXPECT_EQ(read(p->buffers.progress, blocks),
            std::vector<std::uint32_t>(blocks, kCheckpoints + 1));
}

TEST(RealGpuKernels, EmulateRunsBothPipesWithLargeSharedMemoryAndWrappingScratch) {
  REAL_GPU_OR_SKIP(driver);
  auto session = KernelSession::open(*driver, 1);
  ASSERT_OK(session);
  KernelSession& s = **session;
  ASSERT_OK(allow_emulation_shared_memory(*driver, s.module(), s.device()));
  EmulationBuffers b;
  constexpr std::uint64_t kScratch = 1 << 20;  // smaller than one block's traffic: it wraps
  auto scratch = s.alloc(kScratch);
  auto sink = s.alloc(4);
  ASSERT_OK(scratch);
  ASSERT_OK(sink);
  b.scratch = *scratch;
  b.scratch_bytes = kScratch;
  b.sink = *sink;
  auto spec = hw::find_gpu("h100");
  ASSERT_OK(spec);
  for (auto pipe : {workload::ComputePipe::kFp32, workload::ComputePipe::kTensorFp16}) {
    workload::Kernel k;
    k.name = "pipes";
    k.pipe = pipe;
    k.blocks = 300;
    k.block.threads = 200;                     // a partial last warp
    k.block.shared_memory_bytes = 100 * 1024;  // above the 48 KiB default
    k.flops_per_block = 2.0 * 16 * 16 * 16 * 6 * 1000;
    k.bytes_per_block = 3 << 20;
    auto l = emulation_launch(k, {50, 300}, *spec, b);
    ASSERT_OK(l);
    ASSERT_OK(s.module().launch(TESSERA_KERNEL_EMULATE, l->grid, l->block, l->shared_bytes,
                                s.stream(0), l->params));
    ASSERT_OK(s.sync(0));
  }
  EXPECT_EQ(s.read<std::uint32_t>(*sink, 1).value_or(std::vector<std::uint32_t>{1}).at(0), 0u)
      << "the impossible value was computed";
}

}  // namespace
}  // namespace tessera::cuda
