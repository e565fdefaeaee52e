#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::hw {
namespace {

using ::testing::HasSubstr;

TEST(GpuCatalog, HoldsTheFiveBoardsInStableOrder) {
  const auto& catalog = gpu_catalog();
  ASSERT_EQ(catalog.size(), 5u);
  EXPECT_EQ(catalog[0].name, "A100-SXM4-40GB");
  EXPECT_EQ(catalog[1].name, "A100-SXM4-80GB");
  EXPECT_EQ(catalog[2].name, "H100-SXM5-80GB");
  EXPECT_EQ(catalog[3].name, "H200-SXM-141GB");
  EXPECT_EQ(catalog[4].name, "RTX-4090-24GB");
  // The same object every call: callers may keep references into it.
  EXPECT_EQ(&gpu_catalog(), &catalog);
}

TEST(FindGpu, ExactNameReturnsThatEntry) {
  for (const GpuSpec& g : gpu_catalog()) {
    auto found = find_gpu(g.name);
    ASSERT_TRUE(found.has_value()) << g.name;
    EXPECT_EQ(found->name, g.name);
    EXPECT_EQ(found->sms, g.sms);
    EXPECT_EQ(found->memory_bytes, g.memory_bytes);
  }
}

TEST(FindGpu, IgnoresCase) {
  auto lower = find_gpu("h100-sxm5-80gb");
  ASSERT_TRUE(lower.has_value());
  EXPECT_EQ(lower->name, "H100-SXM5-80GB");
  auto mixed = find_gpu("a100-Sxm4-40Gb");
  ASSERT_TRUE(mixed.has_value());
  EXPECT_EQ(mixed->name, "A100-SXM4-40GB");
}

TEST(FindGpu, ShortAliases) {
  EXPECT_EQ(find_gpu("h100").value().name, "H100-SXM5-80GB");
  EXPECT_EQ(find_gpu("h200").value().name, "H200-SXM-141GB");
  EXPECT_EQ(find_gpu("a100-40gb").value().name, "A100-SXM4-40GB");
  EXPECT_EQ(find_gpu("a100-80gb").value().name, "A100-SXM4-80GB");
  EXPECT_EQ(find_gpu("H100").value().name, "H100-SXM5-80GB");
  EXPECT_EQ(find_gpu("RTX4090").value().name, "RTX-4090-24GB");
}

TEST(FindGpu, UnknownNameListsKnownNames) {
  auto r = find_gpu("V100");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().domain(), core::Domain::kHardware);
  EXPECT_EQ(r.error().code(), core::Code::kNotFound);
  const std::string& msg = r.error().message();
  EXPECT_THAT(msg, HasSubstr("'V100'"));
  for (const GpuSpec& g : gpu_catalog()) EXPECT_THAT(msg, HasSubstr(g.name));
  EXPECT_THAT(msg, HasSubstr("h100"));
}

TEST(FindGpu, RejectsPrefixesAndEmpty) {
  EXPECT_FALSE(find_gpu("").has_value());
  EXPECT_FALSE(find_gpu("a100").has_value());  // ambiguous between 40GB and 80GB
  EXPECT_FALSE(find_gpu("H100-SXM5-80GB ").has_value());
}

TEST(GpuForDeviceName, DriverNamesOfEveryCatalogBoard) {
  // As cuDeviceGetName and nvmlDeviceGetName report them (nvidia-smi prints the same string).
  EXPECT_EQ(gpu_for_device_name("NVIDIA A100-SXM4-40GB"), "A100-SXM4-40GB");
  EXPECT_EQ(gpu_for_device_name("NVIDIA A100-SXM4-80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(gpu_for_device_name("NVIDIA A100 80GB PCIe"), "A100-SXM4-80GB");
  EXPECT_EQ(gpu_for_device_name("NVIDIA H100 80GB HBM3"), "H100-SXM5-80GB");
  EXPECT_EQ(gpu_for_device_name("NVIDIA H200"), "H200-SXM-141GB");
  EXPECT_EQ(gpu_for_device_name("NVIDIA GeForce RTX 4090"), "RTX-4090-24GB");
  for (const GpuSpec& g : gpu_catalog()) {
    EXPECT_EQ(gpu_for_device_name("NVIDIA " + g.name), g.name) << "its own catalog name";
  }
}

TEST(GpuForDeviceName, BoardsOutsideTheCatalogAreNone) {
  EXPECT_EQ(gpu_for_device_name("NVIDIA Tesla K80"), std::nullopt);
  EXPECT_EQ(gpu_for_device_name("NVIDIA A100"), std::nullopt) << "which memory size is unknown";
  EXPECT_EQ(gpu_for_device_name(""), std::nullopt);
}

TEST(GpuCatalog, NamesAreUniqueIgnoringCase) {
  std::set<std::string> seen;
  for (const GpuSpec& g : gpu_catalog()) {
    std::string lower;
    for (char c : g.name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(seen.insert(lower).second) << g.name;
  }
}

class EveryEntry : public ::testing::TestWithParam<GpuSpec> {};

TEST_P(EveryEntry, TopologyAddsUp) {
  const GpuSpec& g = GetParam();
  EXPECT_GT(g.gpcs, 0);
  EXPECT_GT(g.sms_per_tpc, 0);
  EXPECT_EQ(g.tpcs * g.sms_per_tpc, g.sms);
  EXPECT_LE(g.gpcs, g.tpcs);
}

TEST_P(EveryEntry, SmLimitsArePositiveAndConsistent) {
  const SmLimits& sm = GetParam().sm;
  EXPECT_GT(sm.max_threads, 0);
  EXPECT_GT(sm.max_blocks, 0);
  EXPECT_GT(sm.registers, 0);
  EXPECT_GT(sm.max_registers_per_thread, 0);
  EXPECT_GT(sm.shared_memory_bytes, 0);
  EXPECT_GT(sm.max_shared_memory_per_block_bytes, 0);
  EXPECT_GT(sm.max_threads_per_block, 0);
  EXPECT_LE(sm.max_threads_per_block, sm.max_threads);
  EXPECT_LE(sm.max_shared_memory_per_block_bytes, sm.shared_memory_bytes);
  EXPECT_EQ(sm.max_threads % 32, 0);  // whole warps
}

TEST_P(EveryEntry, PerSmLimitsMatchComputeCapability) {
  const GpuSpec& g = GetParam();
  EXPECT_EQ(g.sm.registers, 65536);
  EXPECT_EQ(g.sm.max_registers_per_thread, 255);
  EXPECT_EQ(g.sm.max_threads_per_block, 1024);
  if (g.compute_capability_major == 8 && g.compute_capability_minor == 9) {
    EXPECT_EQ(g.sm.max_threads, 1536);
    EXPECT_EQ(g.sm.max_blocks, 24);
    EXPECT_EQ(g.sm.shared_memory_bytes, 100 * 1024);
    EXPECT_EQ(g.sm.max_shared_memory_per_block_bytes, 99 * 1024);
    EXPECT_EQ(g.green_ctx_sm_granularity, 2);
    EXPECT_EQ(g.green_ctx_min_sms, 4);
    return;
  }
  EXPECT_EQ(g.sm.max_threads, 2048);
  EXPECT_EQ(g.sm.max_blocks, 32);
  if (g.compute_capability_major == 8) {
    EXPECT_EQ(g.sm.shared_memory_bytes, 164 * 1024);
    EXPECT_EQ(g.sm.max_shared_memory_per_block_bytes, 163 * 1024);
    EXPECT_EQ(g.green_ctx_sm_granularity, 2);
    EXPECT_EQ(g.green_ctx_min_sms, 4);
  } else {
    ASSERT_EQ(g.compute_capability_major, 9);
    EXPECT_EQ(g.sm.shared_memory_bytes, 228 * 1024);
    EXPECT_EQ(g.sm.max_shared_memory_per_block_bytes, 227 * 1024);
    EXPECT_EQ(g.green_ctx_sm_granularity, 8);
    EXPECT_EQ(g.green_ctx_min_sms, 8);
  }
}

TEST_P(EveryEntry, ClocksAreOrdered) {
  const GpuSpec& g = GetParam();
  EXPECT_GT(g.min_clock_mhz, 0);
  EXPECT_LE(g.min_clock_mhz, g.base_clock_mhz);
  EXPECT_LE(g.base_clock_mhz, g.boost_clock_mhz);
}

TEST_P(EveryEntry, PowerAndMemoryArePositive) {
  const GpuSpec& g = GetParam();
  EXPECT_GT(g.idle_watts, 0);
  EXPECT_LT(g.idle_watts, g.tdp_watts);
  EXPECT_GT(g.memory_bytes, 0);
  EXPECT_GT(g.memory_bandwidth_bytes_per_s, 0);
}

TEST_P(EveryEntry, GreenContextPartitionsFitTheDevice) {
  const GpuSpec& g = GetParam();
  EXPECT_GT(g.green_ctx_sm_granularity, 0);
  EXPECT_GE(g.green_ctx_min_sms, g.green_ctx_sm_granularity);
  EXPECT_LE(g.green_ctx_min_sms, g.sms);
  EXPECT_EQ(g.green_ctx_min_sms % g.green_ctx_sm_granularity, 0);
}

TEST_P(EveryEntry, MigInstancesFitTheGpcs) {
  const GpuSpec& g = GetParam();
  if (!g.mig_capable) {
    EXPECT_EQ(g.mig_max_instances, 0);
    return;
  }
  EXPECT_EQ(g.mig_max_instances, 7);
  EXPECT_LE(g.mig_max_instances, g.gpcs);  // one instance needs at least one GPC
}

TEST_P(EveryEntry, PerSmPerCyclePeaksRebuildTheDevicePeaks) {
  const GpuSpec& g = GetParam();
  const double hz = g.boost_clock_mhz * 1e6;
  EXPECT_NEAR(g.fp16_tensor_flops_per_sm_per_cycle() * g.sms * hz, g.peak_fp16_tensor_flops,
              g.peak_fp16_tensor_flops * 1e-12);
  EXPECT_NEAR(g.fp32_flops_per_sm_per_cycle() * g.sms * hz, g.peak_fp32_flops,
              g.peak_fp32_flops * 1e-12);
  // Tensor cores do more per cycle than the FP32 pipes: 8x or more on the data-centre boards,
  // 2x on GeForce Ada at its FP32-accumulate rate.
  EXPECT_GE(g.fp16_tensor_flops_per_sm_per_cycle(), 1.99 * g.fp32_flops_per_sm_per_cycle());
  if (g.mig_capable) {
    EXPECT_GT(g.fp16_tensor_flops_per_sm_per_cycle(), 8 * g.fp32_flops_per_sm_per_cycle());
  }
}

INSTANTIATE_TEST_SUITE_P(Catalog, EveryEntry, ::testing::ValuesIn(gpu_catalog()),
                         [](const ::testing::TestParamInfo<GpuSpec>& info) {
                           std::string n;
                           for (char c : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Published figures the simulator depends on, pinned so an accidental edit is caught.
TEST(GpuCatalog, A100FiguresMatchThePublishedOnes) {
  const GpuSpec g = find_gpu("a100-40gb").value();
  EXPECT_EQ(g.sms, 108);
  EXPECT_EQ(g.tpcs, 54);
  EXPECT_EQ(g.gpcs, 7);
  EXPECT_DOUBLE_EQ(g.boost_clock_mhz, 1410);
  EXPECT_DOUBLE_EQ(g.peak_fp16_tensor_flops, 312e12);
  EXPECT_DOUBLE_EQ(g.peak_fp32_flops, 19.5e12);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 1555e9);
  EXPECT_DOUBLE_EQ(g.tdp_watts, 400);
  // 312 TFLOPS over 108 SMs at 1410 MHz is A100's 1024 dense FP16 FMA per SM per clock.
  EXPECT_NEAR(g.fp16_tensor_flops_per_sm_per_cycle(), 2048, 1.0);
  EXPECT_NEAR(g.fp32_flops_per_sm_per_cycle(), 128, 0.1);

  const GpuSpec g80 = find_gpu("a100-80gb").value();
  EXPECT_DOUBLE_EQ(g80.memory_bandwidth_bytes_per_s, 2039e9);
  EXPECT_EQ(g80.memory_bytes, 2 * g.memory_bytes);
}

TEST(GpuCatalog, HopperFiguresMatchThePublishedOnes) {
  const GpuSpec h100 = find_gpu("h100").value();
  EXPECT_EQ(h100.sms, 132);
  EXPECT_EQ(h100.tpcs, 66);
  EXPECT_DOUBLE_EQ(h100.boost_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(h100.peak_fp16_tensor_flops, 989.4e12);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.tdp_watts, 700);
  // 66.9 TFLOPS over 132 SMs at 1980 MHz is Hopper's 128 FP32 FMA per SM per clock.
  EXPECT_NEAR(h100.fp32_flops_per_sm_per_cycle(), 256, 0.1);

  const GpuSpec h200 = find_gpu("h200").value();
  EXPECT_EQ(h200.sms, h100.sms);
  EXPECT_DOUBLE_EQ(h200.peak_fp16_tensor_flops, h100.peak_fp16_tensor_flops);
  EXPECT_DOUBLE_EQ(h200.memory_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_GT(h200.memory_bytes, h100.memory_bytes);
}

TEST(GpuCatalog, Rtx4090FiguresMatchThePublishedOnes) {
  const GpuSpec g = find_gpu("rtx4090").value();
  EXPECT_EQ(g.sms, 128);
  EXPECT_EQ(g.tpcs, 64);
  EXPECT_EQ(g.gpcs, 11);
  EXPECT_DOUBLE_EQ(g.boost_clock_mhz, 2520);
  EXPECT_DOUBLE_EQ(g.peak_fp16_tensor_flops, 165.2e12);
  EXPECT_DOUBLE_EQ(g.peak_fp32_flops, 82.6e12);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 1008e9);
  EXPECT_DOUBLE_EQ(g.tdp_watts, 450);
  EXPECT_FALSE(g.mig_capable);
  // 165.2 TFLOPS over 128 SMs at 2520 MHz is 512 FLOP per SM per clock: half the FP16-accumulate
  // rate, the GeForce Ada FP32-accumulate tensor rate.
  EXPECT_NEAR(g.fp16_tensor_flops_per_sm_per_cycle(), 512, 0.5);
  // 82.6 TFLOPS: Ada's 128 FP32 FMA per SM per clock.
  EXPECT_NEAR(g.fp32_flops_per_sm_per_cycle(), 256, 0.5);
}

}  // namespace
}  // namespace tessera::hw
