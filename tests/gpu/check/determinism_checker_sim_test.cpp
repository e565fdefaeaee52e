// The determinism checker on the simulated GPU: every registered mode passes it on real workloads
// (decoder layers in repeated groups, a training iteration), and a policy that reorders kernels
// fails it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/modes/lithos/lithos_options.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::gpu {
namespace {

using ::testing::HasSubstr;

struct Work {
  std::vector<workload::KernelSequencePtr> llm;
  std::vector<workload::KernelSequencePtr> training;
  std::int64_t kernels = 0;
};

Work make_work() {
  Work w;
  const auto model = workload::find_model("llama-3-8b");
  EXPECT_TRUE(model);
  const std::vector<int> prompts{512, 128};
  const std::vector<int> contexts{513, 129};
  w.llm.push_back(std::make_shared<const workload::KernelSequence>(
      workload::prefill_step(model.value(), prompts)));
  for (int i = 0; i < 3; ++i) {
    w.llm.push_back(
        std::make_shared<const workload::KernelSequence>(workload::decode_step(*model, contexts)));
  }
  w.training.push_back(
      std::make_shared<const workload::KernelSequence>(workload::resnet50_iteration(32)));
  for (const auto& s : w.llm) w.kernels += s->kernel_count();
  for (const auto& s : w.training) w.kernels += s->kernel_count();
  return w;
}

// Counts launches that ran part of a grid, to show the checker saw atoms.
struct AtomCounter final : device::DeviceObserver {
  int atoms = 0;
  void on_kernel_complete(const device::KernelEvent& e) override {
    if (e.blocks.size() < e.kernel->blocks) ++atoms;
  }
};

class ModesOnSimGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(ModesOnSimGpu, PassTheCheck) {
  const auto spec = hw::find_gpu("h100");
  ASSERT_TRUE(spec);
  sim::Engine engine;
  auto dev = sim::SimGpu::create(engine, *spec);
  ASSERT_TRUE(dev) << dev.error().message();
  // Short atoms, so that LithOS splits many kernels (its default targets 250 us).
  ModeSettings settings;
  settings.of<LithosOptions>("lithos").atom_duration = core::micros(20);
  auto inner = make_sharing_mode(GetParam(), settings);
  ASSERT_TRUE(inner);
  CheckedMode mode(std::move(*inner));
  const std::vector<TenantInfo> tenants{{.id = 0,
                                         .name = "llm",
                                         .latency_critical = true,
                                         .priority = 10,
                                         .ttft_slo = core::millis(200),
                                         .tpot_slo = core::millis(30)},
                                        {.id = 1, .name = "resnet"}};
  // Exclusive mode is one tenant per GPU; give it both workloads on one tenant.
  const bool exclusive = std::string_view(GetParam()) == "exclusive";
  ASSERT_TRUE(mode.attach(**dev, exclusive ? std::span(tenants).first(1) : std::span(tenants)));
  AtomCounter atoms;
  (*dev)->add_observer(&atoms);
  const Work w = make_work();
  ASSERT_GT(w.kernels, 300);  // 32 decoder layers per step: the groups are really walked
  int done = 0;
  const auto count = [&done](const device::SubmissionDone&) { ++done; };
  for (const auto& s : w.llm) ASSERT_TRUE(mode.submit(0, s, 0, count));
  for (const auto& s : w.training) ASSERT_TRUE(mode.submit(exclusive ? 0 : 1, s, 0, count));
  engine.run_until(core::seconds(10));
  EXPECT_EQ(done, static_cast<int>(w.llm.size() + w.training.size()));
  const auto st = mode.verdict();
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(mode.checker().kernels_checked(), w.kernels);
  // LithOS splits the best-effort kernels into atoms; the checker tiled them back together.
  if (std::string_view(GetParam()) == "lithos") {
    EXPECT_GT(atoms.atoms, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ModesOnSimGpu,
                         ::testing::Values("exclusive", "time-slicing", "mps", "static-partitions",
                                           "cogpu", "tpot-first", "lithos"));

// Broken: runs each sequence's groups in reverse order (decoder layers before the embedding).
class ReversingPolicy final : public SharingMode {
 public:
  std::string_view name() const override { return "reversing"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo>) override {
    device_ = &device;
    device::StreamConfig config;
    config.context = context_for(0);
    TESSERA_ASSIGN_OR_RETURN(stream_, device.create_stream(config));
    return {};
  }
  core::Status submit(TenantId, workload::KernelSequencePtr seq, std::uint64_t tag,
                      device::DoneCallback done) override {
    workload::KernelSequence reversed = *seq;
    std::reverse(reversed.groups.begin(), reversed.groups.end());
    return device_->submit(stream_, std::make_shared<const workload::KernelSequence>(reversed), tag,
                           std::move(done));
  }
  std::vector<PartitionInfo> partitions() const override { return {}; }

 private:
  device::GpuDevice* device_ = nullptr;
  device::StreamId stream_ = 0;
};

TEST(DeterminismCheckerOnSimGpu, CatchesAReorderingPolicy) {
  const auto spec = hw::find_gpu("a100-80gb");
  ASSERT_TRUE(spec);
  sim::Engine engine;
  auto dev = sim::SimGpu::create(engine, *spec);
  ASSERT_TRUE(dev);
  CheckedMode mode(std::make_unique<ReversingPolicy>());
  const std::vector<TenantInfo> tenants{{.id = 3, .name = "llm"}};
  ASSERT_TRUE(mode.attach(**dev, tenants));
  const Work w = make_work();
  ASSERT_TRUE(mode.submit(3, w.llm[1], 0, {}));
  engine.run_until(core::seconds(1));
  const auto st = mode.verdict();
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("mode 'reversing'"));
  EXPECT_THAT(st.error().message(), HasSubstr("tenant 'llm' (context 1), submission 0, kernel 0"));
  EXPECT_EQ(mode.checker().kernels_checked(), 0);
}

}  // namespace
}  // namespace tessera::gpu
