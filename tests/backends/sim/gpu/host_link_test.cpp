// The host-link term of the kernel time model (Kernel::host_link_bytes_per_block): added after
// compute and DRAM, independent of SMs and clock, absent (bit for bit) from every other kernel.

#include <gtest/gtest.h>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/kernel_timing.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/tensor_parallel.hpp"

namespace tessera::sim {
namespace {

class HostLink : public ::testing::Test {
 protected:
  hw::GpuSpec spec = test::TestGpu().build();  // 16 SMs, 1000 FP32 FLOP/ns per SM, 1600 B/ns
  SimGpuOptions options = test::exact_options();
  TimingModel model{spec, options};

  // 64 blocks of 1e6 FLOPs and 1e5 DRAM bytes; `link_bytes` over a 10 bytes/ns link in all.
  workload::Kernel kernel(double link_bytes) const {
    auto k = test::make_kernel("k", 64, 1e6, 1e5);
    k.host_link_bytes_per_block = link_bytes / 64;
    k.host_link_bytes_per_s = 10e9;
    return k;
  }
};

TEST_F(HostLink, AddsBytesOverRateAfterComputeAndMemory) {
  const auto none = model.plan(model.shape(kernel(0)), 64, 16, 1600, 500);
  const auto some = model.plan(model.shape(kernel(1e6)), 64, 16, 1600, 500);
  EXPECT_DOUBLE_EQ(none.link_ns, 0);
  EXPECT_DOUBLE_EQ(some.link_ns, 1e6 / 10);
  const auto r0 = TimingModel::rates(none, 1.0);
  const auto r1 = TimingModel::rates(some, 1.0);
  // 4 rounds of 1 us compute beat 6.4e6 bytes at 1600 bytes/ns; plus 500 ns overhead.
  EXPECT_DOUBLE_EQ(r0.duration_ns, 500 + 4000);
  EXPECT_DOUBLE_EQ(r1.duration_ns, 500 + 4000 + 1e5);
  // The link neither speeds up with SMs nor with the clock.
  EXPECT_DOUBLE_EQ(model.plan(model.shape(kernel(1e6)), 64, 4, 1600, 0).link_ns, 1e5);
  EXPECT_DOUBLE_EQ(TimingModel::rates(some, 0.5).duration_ns, 500 + 8000 + 1e5);
  // Half the blocks left, half the transfer left.
  EXPECT_DOUBLE_EQ(model.plan(model.shape(kernel(1e6)), 32, 16, 1600, 0).link_ns, 5e4);
}

TEST_F(HostLink, KernelWithoutHostTrafficIsTimedAsBefore) {
  // The same grid with a link rate but no bytes: bit-identical to a kernel that never heard of
  // the link, on the whole simulated device.
  auto plain = test::make_kernel("k", 64, 1e6, 1e5);
  auto rated = plain;
  rated.host_link_bytes_per_s = 10e9;
  EXPECT_EQ(test::run_alone(spec, options, test::sequence_of({plain})),
            test::run_alone(spec, options, test::sequence_of({rated})));
}

TEST_F(HostLink, SimulatedAllReduceScalesWithThePenaltyExactly) {
  // A tp=2 all-reduce of a 2048-token prefill's activations (qwen2.5-14b: hidden 5120) on the
  // simulated RTX 4090, at FlexTopo's three placements.
  const auto gpu = hw::find_gpu("rtx4090");
  ASSERT_TRUE(gpu.has_value());
  const SimGpuOptions defaults;
  const auto time_at = [&](double penalty) {
    const workload::TensorParallel tp{.degree = 2, .link_bytes_per_s = 24e9, .penalty = penalty};
    return test::run_alone(*gpu, defaults,
                           test::sequence_of({workload::all_reduce("ar", 2048 * 5120, 2, tp)}));
  };
  const core::Nanos near = time_at(1.0);
  const core::Nanos socket = time_at(1.2);
  const core::Nanos far = time_at(3.2);
  // 2048 x 5120 x 2 bytes over 24 GB/s: 873,813 ns on the link at 1x.
  const double link = 2048.0 * 5120 * 2 / 24.0;
  ASSERT_GT(near, link);
  // Only the link term grows; whole-ns rounding leaves at most 1 ns either side.
  EXPECT_NEAR(static_cast<double>(socket - near), 0.2 * link, 2.0);
  EXPECT_NEAR(static_cast<double>(far - near), 2.2 * link, 2.0);
}

TEST_F(HostLink, OccupancyRejectsBadLinkFigures) {
  auto k = kernel(1e6);
  k.host_link_bytes_per_s = 0;
  EXPECT_EQ(test::run_alone(spec, options, test::sequence_of({k})), -1);
  k = kernel(-5);
  EXPECT_EQ(test::run_alone(spec, options, test::sequence_of({k})), -1);
}

}  // namespace
}  // namespace tessera::sim
