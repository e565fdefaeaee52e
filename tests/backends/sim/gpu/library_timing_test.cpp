// The calibrated parts of the kernel model, worked out by hand on the synthetic test GPU (16 SMs,
// 4000 tensor FLOP/ns and 100 bytes/ns of even bandwidth share per SM): GEMMs timed as a library
// tiles them on the SMs they hold, the memory-bound kinds' bandwidth fractions, and the latency of
// a collective's steps.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/kernel_timing.hpp"
#include "tessera/workload/kernels/gemm_shapes.hpp"

namespace tessera::sim {
namespace {

class LibraryTiming : public ::testing::Test {
 protected:
  LibraryTiming() {
    options.gemm_tile_selection = true;
    options.gemm_compute_fraction = 1;
    options.gemm_tile_knee = 32;
    options.stream_k_compute_fraction = 1;
    options.stream_k_tile_knee = 32;
  }
  hw::GpuSpec spec = test::TestGpu().build();
  SimGpuOptions options = test::exact_options();
};

// Efficiency of a tm x tn tile with knee 32, relative to the 256x128 tile (I = 85.33).
double efficiency(double tm, double tn) {
  const double i = tm * tn / (tm + tn);
  const double reference = 256.0 * 128 / 384;
  return i / (i + 32) * (reference + 32) / reference;
}

TEST_F(LibraryTiming, TheLibraryPicksTheFastestTileForTheSmsItGets) {
  const TimingModel model(spec, options);
  // 256 x 256 x 256: K is too shallow to split (slices of at least 256).
  const auto g = workload::make_gemm(workload::dense_gemm("g", 256, 256, 256, 2));
  const KernelShape shape = model.shape(g);
  // On 16 SMs: 64x64 tiles give 16 tiles in one wave, each 2*64*64*256 FLOP at 4000 FLOP/ns and
  // 0.6875 efficiency (762.6 ns); 64x128 gives 8 tiles at 0.786 (1334 ns); bigger tiles are
  // slower still. Memory: 393,216 bytes at 1600 bytes/ns = 245.8 ns, below compute.
  const auto wide = model.gemm_choice(shape, 16, 1600);
  EXPECT_EQ(wide.tile_m, 64);
  EXPECT_EQ(wide.tile_n, 64);
  EXPECT_EQ(wide.split_k, 1);
  EXPECT_NEAR(wide.compute_ns_at_boost, 2.0 * 64 * 64 * 256 / 4000 / efficiency(64, 64), 1e-6);
  EXPECT_DOUBLE_EQ(wide.bytes, 3.0 * 256 * 256 * 2);
  // On 2 SMs: 64x64 is 8 waves (6101 ns), 128x128 two (4576 ns), 256x128 one (4194 ns).
  const auto narrow = model.gemm_choice(shape, 2, 1600);
  EXPECT_EQ(narrow.tile_m, 256);
  EXPECT_EQ(narrow.tile_n, 128);
  EXPECT_NEAR(narrow.compute_ns_at_boost, 2.0 * 256 * 128 * 256 / 4000, 1e-6);
}

TEST_F(LibraryTiming, ASplitKAddsItsPartialSumsToTheBytes) {
  const TimingModel model(spec, options);
  // 128 x 128 x 4096 on 16 SMs: one 128x128 tile; splitting K 16 ways fills every SM, 16x
  // faster, at 2 x 15 x 128 x 128 x 4 bytes of FP32 partial sums.
  const auto g = workload::make_gemm(workload::dense_gemm("g", 128, 128, 4096, 2));
  const auto c = model.gemm_choice(model.shape(g), 16, 1600);
  EXPECT_EQ(c.split_k, 16);
  const double operands = (128.0 * 4096 + 4096.0 * 128 + 128.0 * 128) * 2;
  EXPECT_DOUBLE_EQ(c.bytes, operands + 2.0 * 15 * 128 * 128 * 4);
}

TEST_F(LibraryTiming, StreamKSpreadsThePartialLastWaveOverEverySm) {
  // 1280 x 512 x 256 on 16 SMs (K too shallow to split): 256x128 tiles are 20, 1.25 waves.
  const auto g = workload::make_gemm(workload::dense_gemm("g", 1280, 512, 256, 2));
  // Whole tiles in waves: 128x64 is best, 80 tiles in 5 waves of 2*128*64*256 FLOP at 4000
  // FLOP/ns and efficiency 0.786 (6673 ns); 256x128 would take 2 waves (8389 ns).
  const TimingModel waves(spec, options);
  const auto whole = waves.gemm_choice(waves.shape(g), 16, 1600);
  EXPECT_EQ(whole.tile_m, 128);
  EXPECT_EQ(whole.tile_n, 64);
  EXPECT_NEAR(whole.compute_ns_at_boost, 5 * 2.0 * 128 * 64 * 256 / 4000 / efficiency(128, 64),
              1e-6);
  // Stream-K: the 20 tiles' 4 iterations of 64 are 80, 5 per SM, each 2*256*128*64 FLOP at
  // efficiency 1 (5243 ns). The 16 tiles that straddle two SMs' runs are fixed up through FP32
  // partial sums written and read once.
  options.gemm_stream_k = true;
  const TimingModel stream_k(spec, options);
  const auto c = stream_k.gemm_choice(stream_k.shape(g), 16, 1600);
  EXPECT_EQ(c.tile_m, 256);
  EXPECT_EQ(c.tile_n, 128);
  EXPECT_EQ(c.split_k, 0);
  EXPECT_NEAR(c.compute_ns_at_boost, 5 * 2.0 * 256 * 128 * 64 / 4000, 1e-6);
  const double operands = (1280.0 * 256 + 256.0 * 512 + 1280.0 * 512) * 2;
  EXPECT_DOUBLE_EQ(c.bytes, operands + 2.0 * 16 * 256 * 128 * 4);
}

TEST_F(LibraryTiming, StreamKLeavesAGemmThatFillsItsWavesAlone) {
  // 1024 x 512 x 256: 16 tiles of 256x128, one full wave, as fast either way and no fix-up.
  options.gemm_stream_k = true;
  const TimingModel model(spec, options);
  const auto g = workload::make_gemm(workload::dense_gemm("g", 1024, 512, 256, 2));
  const auto c = model.gemm_choice(model.shape(g), 16, 1600);
  EXPECT_NEAR(c.compute_ns_at_boost, 2.0 * 256 * 128 * 256 / 4000, 1e-6);
  EXPECT_DOUBLE_EQ(c.bytes, (1024.0 * 256 + 256.0 * 512 + 1024.0 * 512) * 2);
}

TEST_F(LibraryTiming, GemmsOfOneShapeThatMoveDifferentBytesAreChosenForApart) {
  // Three GEMMs of 128 x 128 x 4096 on 16 SMs (ASplitKAddsItsPartialSumsToTheBytes): a dense
  // layer; a convolution's implicit GEMM, which reads its activations (a ninth of the im2col
  // matrix) rather than A; and one whose operands stream a gigabyte, memory-bound however it is
  // tiled, so splitting K (more bytes, no time saved) does not pay.
  const auto dense = workload::make_gemm(workload::dense_gemm("dense", 128, 128, 4096, 2));
  workload::GemmDesc conv_desc = workload::dense_gemm("conv", 128, 128, 4096, 2);
  conv_desc.kind = workload::KernelClass::kConv;
  conv_desc.a_bytes /= 9;
  const auto conv = workload::make_gemm(conv_desc);
  workload::GemmDesc streaming_desc = workload::dense_gemm("streaming", 128, 128, 4096, 2);
  streaming_desc.a_bytes = 1e9 - streaming_desc.b_bytes - streaming_desc.c_bytes;
  const auto streaming = workload::make_gemm(streaming_desc);
  const workload::Kernel* gemms[] = {&dense, &conv, &streaming};
  for (const auto* g : gemms) {
    ASSERT_EQ(g->gemm.m, 128);
    ASSERT_EQ(g->gemm.n, 128);
    ASSERT_EQ(g->gemm.k, 4096);
    ASSERT_EQ(g->gemm.groups, 1);
  }
  const double a = 128.0 * 4096 * 2;
  const double b = 4096.0 * 128 * 2;
  const double c = 128.0 * 128 * 2;
  ASSERT_DOUBLE_EQ(dense.gemm.operand_bytes, a + b + c);
  ASSERT_DOUBLE_EQ(conv.gemm.operand_bytes, a / 9 + b + c);
  ASSERT_DOUBLE_EQ(streaming.gemm.operand_bytes, 1e9);

  // Each asked first of a fresh model: the answers the cache must not mix up.
  std::vector<TimingModel::GemmChoice> alone;
  for (const auto* g : gemms) {
    const TimingModel model(spec, options);
    alone.push_back(model.gemm_choice(model.shape(*g), 16, 1600));
  }
  const double partial_sums = 2.0 * 15 * 128 * 128 * 4;
  EXPECT_EQ(alone[0].split_k, 16);
  EXPECT_DOUBLE_EQ(alone[0].bytes, a + b + c + partial_sums);
  EXPECT_EQ(alone[1].split_k, 16);
  EXPECT_DOUBLE_EQ(alone[1].bytes, a / 9 + b + c + partial_sums);
  // 1e9 bytes at 1600 bytes/ns is 625 us whatever the tiling, above every unsplit tiling's
  // compute (67 us for one 256x128 tile); the first considered, 256x128, stands, and any split
  // only adds partial sums.
  EXPECT_EQ(alone[2].split_k, 1);
  EXPECT_EQ(alone[2].tile_m, 256);
  EXPECT_EQ(alone[2].tile_n, 128);
  EXPECT_DOUBLE_EQ(alone[2].bytes, 1e9);
  EXPECT_NE(alone[0].bytes, alone[1].bytes);
  EXPECT_NE(alone[0].bytes, alone[2].bytes);
  EXPECT_NE(alone[1].bytes, alone[2].bytes);

  // In every order on one model, each gets the same answer as alone, and asking again repeats it.
  std::array<int, 3> order{0, 1, 2};
  do {
    SCOPED_TRACE(testing::Message() << order[0] << order[1] << order[2]);
    const TimingModel model(spec, options);
    for (int round = 0; round < 2; ++round) {
      for (const int i : order) {
        const auto got = model.gemm_choice(model.shape(*gemms[i]), 16, 1600);
        EXPECT_DOUBLE_EQ(got.bytes, alone[i].bytes) << gemms[i]->name;
        EXPECT_DOUBLE_EQ(got.compute_ns_at_boost, alone[i].compute_ns_at_boost) << gemms[i]->name;
        EXPECT_EQ(got.tile_m, alone[i].tile_m) << gemms[i]->name;
        EXPECT_EQ(got.tile_n, alone[i].tile_n) << gemms[i]->name;
        EXPECT_EQ(got.split_k, alone[i].split_k) << gemms[i]->name;
      }
    }
    // The plans the simulator times from them differ the same way.
    const KernelShape dense_shape = model.shape(dense);
    const KernelShape conv_shape = model.shape(conv);
    const auto blocks = static_cast<double>(dense.blocks);
    ASSERT_EQ(conv.blocks, dense.blocks);
    EXPECT_DOUBLE_EQ(model.plan(dense_shape, blocks, 16, 1600, 0).bytes, alone[0].bytes);
    EXPECT_DOUBLE_EQ(model.plan(conv_shape, blocks, 16, 1600, 0).bytes, alone[1].bytes);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(LibraryTiming, TheStreamKLibraryTimesEveryGemmWithItsOwnFractionKneeAndFixedCost) {
  // 1024 x 512 x 256 fills one wave of 256x128 tiles on 16 SMs either way (the test above).
  const auto g = workload::make_gemm(workload::dense_gemm("g", 1024, 512, 256, 2));
  options.gemm_fixed = 2000;
  options.stream_k_fixed = 3000;
  options.stream_k_compute_fraction = 0.5;
  options.stream_k_tile_knee = 0;
  const TimingModel without(spec, options);
  EXPECT_DOUBLE_EQ(without.shape(g).fixed_ns, 2000);
  EXPECT_NEAR(without.gemm_choice(without.shape(g), 16, 1600).compute_ns_at_boost,
              2.0 * 256 * 128 * 256 / 4000, 1e-6);
  // With Stream-K kernels the library runs the same tile at half the peak, and with a knee of 0
  // every tile is as efficient as 256x128: 128x64 tiles (64 of them, 4 waves) tie with it.
  options.gemm_stream_k = true;
  const TimingModel with(spec, options);
  EXPECT_DOUBLE_EQ(with.shape(g).fixed_ns, 3000);
  EXPECT_NEAR(with.gemm_choice(with.shape(g), 16, 1600).compute_ns_at_boost,
              2.0 * 256 * 128 * 256 / 4000 / 0.5, 1e-6);
}

TEST_F(LibraryTiming, APlanCoversItsShareOfTheGemmAndTheFixedLatencyIsOverhead) {
  options.gemm_fixed = 2000;
  const TimingModel model(spec, options);
  const auto g = workload::make_gemm(workload::dense_gemm("g", 256, 256, 256, 2));
  const KernelShape shape = model.shape(g);
  EXPECT_DOUBLE_EQ(shape.fixed_ns, 2000);
  const auto c = model.gemm_choice(shape, 16, 1600);
  const double grid = static_cast<double>(g.blocks);
  const Plan half = model.plan(shape, grid / 2, 16, 1600, 0);
  EXPECT_NEAR(half.compute_ns_at_boost, c.compute_ns_at_boost / 2, 1e-9);
  EXPECT_NEAR(half.bytes, c.bytes / 2, 1e-9);
}

TEST_F(LibraryTiming, WithoutTileSelectionAGemmIsItsBuildersGrid) {
  options.gemm_tile_selection = false;
  const TimingModel model(spec, options);
  const auto g = workload::make_gemm(workload::dense_gemm("g", 256, 256, 256, 2));
  const KernelShape shape = model.shape(g);
  EXPECT_EQ(shape.gemm.m, 0);
  EXPECT_DOUBLE_EQ(shape.fixed_ns, 0);
  EXPECT_DOUBLE_EQ(model.plan(shape, static_cast<double>(g.blocks), 16, 1600, 0).bytes,
                   g.total_bytes());
}

TEST_F(LibraryTiming, ElementwiseKernelsMoveTheirBytesAtTheirOwnFraction) {
  options.achievable_bandwidth_fraction = 0.9;
  options.elementwise_bandwidth_fraction = 0.6;
  const TimingModel model(spec, options);
  auto norm = test::make_kernel("norm", 16, 0, 1000);
  norm.kind = workload::KernelClass::kNorm;
  auto attention = norm;
  attention.kind = workload::KernelClass::kAttention;
  // A norm's 1000 bytes occupy the bandwidth 0.9 / 0.6 = 1.5x as long; attention streams.
  EXPECT_DOUBLE_EQ(model.shape(norm).bytes_per_block, 1500);
  EXPECT_DOUBLE_EQ(model.shape(attention).bytes_per_block, 1000);
}

TEST_F(LibraryTiming, AttentionStreamsTheKvCacheAtItsOwnFraction) {
  options.achievable_bandwidth_fraction = 0.8;
  options.elementwise_bandwidth_fraction = 0.6;
  options.attention_bandwidth_fraction = 0.96;
  const TimingModel model(spec, options);
  auto attention = test::make_kernel("attention", 16, 0, 1200);
  attention.kind = workload::KernelClass::kAttention;
  auto gemm = attention;
  gemm.kind = workload::KernelClass::kGemm;
  // 1200 bytes at 0.8 / 0.96 occupy the bandwidth as 1000 would at the achievable fraction;
  // other kernels keep theirs.
  EXPECT_DOUBLE_EQ(model.shape(attention).bytes_per_block, 1000);
  EXPECT_DOUBLE_EQ(model.shape(gemm).bytes_per_block, 1200);
  // Unset, attention streams at the achievable fraction, not the elementwise one.
  options.attention_bandwidth_fraction = 0;
  EXPECT_DOUBLE_EQ(TimingModel(spec, options).shape(attention).bytes_per_block, 1200);
}

TEST_F(LibraryTiming, PointwiseGatherAndNormKernelsHaveFractionsOfTheirOwn) {
  options.achievable_bandwidth_fraction = 0.9;
  options.elementwise_bandwidth_fraction = 0.6;
  options.pointwise_bandwidth_fraction = 0.75;
  options.gather_bandwidth_fraction = 0.15;
  options.norm_bandwidth_fraction = 0.45;
  const TimingModel model(spec, options);
  auto kernel = [](workload::KernelClass kind) {
    auto k = test::make_kernel("k", 16, 0, 1000);
    k.kind = kind;
    return k;
  };
  // 1000 bytes at 0.9 / f: a pointwise add 1200, a gather 6000, a norm 2000; a rotary kernel
  // (kElementwise) keeps the broader fraction, 1500.
  EXPECT_DOUBLE_EQ(model.shape(kernel(workload::KernelClass::kPointwise)).bytes_per_block, 1200);
  EXPECT_DOUBLE_EQ(model.shape(kernel(workload::KernelClass::kEmbedding)).bytes_per_block, 6000);
  EXPECT_DOUBLE_EQ(model.shape(kernel(workload::KernelClass::kNorm)).bytes_per_block, 2000);
  EXPECT_DOUBLE_EQ(model.shape(kernel(workload::KernelClass::kElementwise)).bytes_per_block, 1500);
}

TEST_F(LibraryTiming, AKindWithoutAFractionOfItsOwnTakesTheElementwiseOne) {
  options.achievable_bandwidth_fraction = 0.9;
  options.elementwise_bandwidth_fraction = 0.6;
  const TimingModel model(spec, options);
  for (const auto kind : {workload::KernelClass::kPointwise, workload::KernelClass::kEmbedding,
                          workload::KernelClass::kNorm}) {
    auto k = test::make_kernel("k", 16, 0, 1000);
    k.kind = kind;
    EXPECT_DOUBLE_EQ(model.shape(k).bytes_per_block, 1500) << workload::to_string(kind);
  }
  // With no elementwise fraction either, every kind streams at the achievable one.
  options.elementwise_bandwidth_fraction = 0;
  const TimingModel streaming(spec, options);
  auto add = test::make_kernel("add", 16, 0, 1000);
  add.kind = workload::KernelClass::kPointwise;
  EXPECT_DOUBLE_EQ(streaming.shape(add).bytes_per_block, 1000);
}

TEST_F(LibraryTiming, EachStepOfACollectivePaysTheLatencyAndTheLinkItsFraction) {
  options.collective_latency = 5000;
  options.link_bandwidth_fraction = 0.5;
  const TimingModel model(spec, options);
  auto k = test::make_kernel("all_reduce", 4, 0, 0);
  k.kind = workload::KernelClass::kCommunication;
  k.link_steps = 6;  // a ring all-reduce over 4 GPUs
  k.host_link_bytes_per_block = 1e6;
  k.host_link_bytes_per_s = 1e11;  // 100 bytes/ns: 10 us a block, 20 us at half the rate
  const KernelShape shape = model.shape(k);
  EXPECT_DOUBLE_EQ(shape.fixed_ns, 30000);
  EXPECT_DOUBLE_EQ(shape.link_ns_per_block, 20000);
}

TEST(LibraryOptions, EveryNewOptionOutsideItsRangeIsNamed) {
  const hw::GpuSpec spec = test::TestGpu().build();
  const auto message = [&](auto set) {
    SimGpuOptions o;
    set(o);
    const auto s = validate_model(spec, o);
    return s ? std::string() : s.error().message();
  };
  EXPECT_NE(
      message([](SimGpuOptions& o) { o.gemm_compute_fraction = 0; }).find("gemm_compute_fraction"),
      std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) { o.gemm_tile_knee = -1; }).find("gemm_tile_knee"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) { o.gemm_fixed = -1; }).find("gemm_fixed"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.attention_compute_fraction = 1.5;
            }).find("attention_compute_fraction"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.attention_bandwidth_fraction = -0.5;
            }).find("attention_bandwidth_fraction"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.elementwise_bandwidth_fraction = 2;
            }).find("elementwise_bandwidth_fraction"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.pointwise_bandwidth_fraction = -0.1;
            }).find("pointwise_bandwidth_fraction"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.gather_bandwidth_fraction = 1.5;
            }).find("gather_bandwidth_fraction"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.norm_bandwidth_fraction = 2;
            }).find("norm_bandwidth_fraction"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) { o.collective_latency = -1; }).find("collective_latency"),
            std::string::npos);
  EXPECT_NE(message([](SimGpuOptions& o) {
              o.link_bandwidth_fraction = 0;
            }).find("link_bandwidth_fraction"),
            std::string::npos);
}

TEST(LibraryOptions, AScenarioSectionChangesOnlyWhatItNamesOverTheCalibration) {
  hw::GpuSpec h100 = test::TestGpu().build();
  h100.name = "H100-SXM5-80GB";
  SimGpuOverrides o;
  o.launch_overhead = 7000;
  const SimGpuOptions applied = options_for(h100, o);
  EXPECT_EQ(applied.launch_overhead, 7000);
  EXPECT_DOUBLE_EQ(applied.gemm_compute_fraction, default_options(h100).gemm_compute_fraction);
  // A MIG slice takes its board's calibration; a board without one the generic assumptions.
  hw::GpuSpec slice = h100;
  slice.name = "H100-SXM5-80GB 3g.40gb";
  EXPECT_DOUBLE_EQ(default_options(slice).gemm_tile_knee, default_options(h100).gemm_tile_knee);
  EXPECT_TRUE(default_options(h100).gemm_tile_selection);
  EXPECT_FALSE(default_options(test::TestGpu().build()).gemm_tile_selection);
}

}  // namespace
}  // namespace tessera::sim
