// Every kernel the workload builders produce must be launchable on every catalog GPU: block
// resources within the per-block and per-SM limits, sane costs.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {
namespace {

std::vector<KernelSequence> sample_sequences() {
  std::vector<KernelSequence> out;
  for (const auto& m : model_catalog()) {
    out.push_back(decode_step(m, std::vector<int>{0}));
    out.push_back(decode_step(m, std::vector<int>(256, 4000)));
    out.push_back(decode_step(m, std::vector<int>{131072, 10}));
    out.push_back(prefill_step(m, std::vector<int>{1}));
    out.push_back(prefill_step(m, std::vector<int>{8192}));
    out.push_back(prefill_step(m, std::vector<int>(16, 500)));
  }
  for (const auto& t : training_catalog()) {
    out.push_back(t.iteration(1, Precision::kBf16));
    out.push_back(t.iteration(t.default_batch, Precision::kBf16));
  }
  return out;
}

TEST(LaunchLimitsTest, EveryKernelFitsEveryCatalogGpu) {
  const auto sequences = sample_sequences();
  ASSERT_FALSE(hw::gpu_catalog().empty());
  for (const auto& gpu : hw::gpu_catalog()) {
    const hw::SmLimits& sm = gpu.sm;
    for (const auto& s : sequences) {
      for (const auto& g : s.groups) {
        EXPECT_GE(g.repeat, 1);
        for (const auto& k : g.kernels) {
          SCOPED_TRACE(std::string(k.name) + " on " + gpu.name);
          EXPECT_GE(k.blocks, 1);
          EXPECT_GE(k.block.threads, 32);
          EXPECT_LE(k.block.threads, sm.max_threads_per_block);
          EXPECT_LE(k.block.registers_per_thread, sm.max_registers_per_thread);
          EXPECT_LE(static_cast<std::int64_t>(k.block.registers_per_thread) * k.block.threads,
                    sm.registers);
          EXPECT_LE(k.block.shared_memory_bytes, sm.max_shared_memory_per_block_bytes);
          EXPECT_TRUE(std::isfinite(k.flops_per_block) && k.flops_per_block >= 0);
          EXPECT_TRUE(std::isfinite(k.bytes_per_block) && k.bytes_per_block > 0);
          EXPECT_FALSE(k.name.empty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::workload
