// Which tenants a GPU's memory holds: in scenario order on a shared GPU, each alone under
// exclusive; a tenant that does not fit is reported as out of memory and the others run.

#include "tessera/scenario/tenant_memory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/sim_run_options.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/mig/policy/memory_estimate.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::scenario {
namespace {

using ::testing::HasSubstr;

// Two engines of 0.6 of an 80 GiB H100 (48 GiB each) and a ResNet-50 trainer.
constexpr const char* kScenario = R"(
name: memory
gpu: H100-SXM5-80GB
seed: 3
duration: 2s
modes: [exclusive, mps]
tenants:
  - name: chat
    kind: inference
    model: llama-3-8b
    kv_cache: {gpu_memory_utilization: 0.6}
    arrivals: {process: poisson, rate: 4, input_tokens: {min: 16, max: 64},
               output_tokens: {min: 4, max: 8}}
  - name: chat2
    kind: inference
    model: llama-3-8b
    kv_cache: {gpu_memory_utilization: 0.6}
    arrivals: {process: poisson, rate: 4, input_tokens: {min: 16, max: 64},
               output_tokens: {min: 4, max: 8}}
  - name: trainer
    kind: training
    model: resnet-50
    batch: 64
)";

Scenario scenario() {
  auto s = parse_scenario(kScenario, "memory.yaml", ".");
  EXPECT_TRUE(s.has_value()) << s.error().message();
  return *s;
}

// Every tenant in the whole H100's memory.
std::vector<MemoryPool> whole_gpu(const Scenario& s, std::size_t n) {
  return std::vector<MemoryPool>(n, MemoryPool{.bytes = s.gpu.memory_bytes, .name = "the GPU"});
}

TEST(TenantMemory, TenantsHoldTheirBudgetWeightsOrTrainingEstimate) {
  const Scenario s = scenario();
  EXPECT_DOUBLE_EQ(tenant_memory(s.tenants[0], s.tenants[0].memory).bytes, 0.6 * 80 * (1 << 30));
  const auto& resnet = s.tenants[2].training.model;
  const auto est = mig::estimate_training(resnet, 64, mig::default_optimizer(resnet));
  EXPECT_DOUBLE_EQ(tenant_memory(s.tenants[2], std::nullopt).bytes,
                   static_cast<double>(est.total()));
  EXPECT_THAT(tenant_memory(s.tenants[2], std::nullopt).parts, HasSubstr("optimizer state"));
  // Without a kv_cache an inference tenant holds its weights.
  EXPECT_DOUBLE_EQ(tenant_memory(s.tenants[0], std::nullopt).bytes,
                   s.tenants[0].inference.model.weight_bytes());
}

TEST(TenantMemory, FullPrecisionTrainingHoldsFp32WeightsAndActivations) {
  Scenario s = scenario();
  TenantSpec t = s.tenants[2];
  const double mixed = tenant_memory(t, std::nullopt).bytes;
  t.training.precision = workload::Precision::kTf32;
  const auto& resnet = t.training.model;
  const auto est = mig::estimate_training(resnet, 64, mig::default_optimizer(resnet),
                                          workload::Precision::kTf32);
  EXPECT_DOUBLE_EQ(tenant_memory(t, std::nullopt).bytes, static_cast<double>(est.total()));
  // Saved activations double (4 bytes each), and the weights are the FP32 ones: no 16-bit copy.
  const auto half = mig::estimate_training(resnet, 64, mig::default_optimizer(resnet));
  EXPECT_NEAR(static_cast<double>(est.activations), 2.0 * static_cast<double>(half.activations),
              1e-3 * static_cast<double>(est.activations));
  EXPECT_GT(tenant_memory(t, std::nullopt).bytes, mixed);
}

TEST(TenantMemory, ATenantThatDoesNotFitBesideTheOnesBeforeItIsOutOfMemory) {
  const Scenario s = scenario();
  const std::vector<gpu::TenantId> all{0, 1, 2};
  const auto placed = place_in_memory(s, all, whole_gpu(s, 3));
  ASSERT_EQ(placed.size(), 3u);
  EXPECT_TRUE(placed[0].out_of_memory.empty());
  ASSERT_TRUE(placed[0].serving);
  EXPECT_EQ(placed[0].serving->cache.blocks, s.tenants[0].memory->cache.blocks);
  EXPECT_THAT(placed[1].out_of_memory, HasSubstr("out of memory: needs 48.00 GiB"));
  EXPECT_THAT(placed[1].out_of_memory,
              HasSubstr("32.00 GiB of the GPU's 80.00 GiB are free beside 'chat' 48.00 GiB"));
  EXPECT_FALSE(placed[1].serving);
  // chat2 holds nothing, so the trainer fits in what chat leaves.
  EXPECT_TRUE(placed[2].out_of_memory.empty()) << placed[2].out_of_memory;
  // Alone, each fits.
  for (gpu::TenantId id : all) {
    const std::vector<gpu::TenantId> one{id};
    EXPECT_TRUE(place_in_memory(s, one, whole_gpu(s, 1))[0].out_of_memory.empty());
  }
}

TEST(TenantMemory, EachPoolHoldsItsOwnTenantsAndSizesTheirKvCache) {
  const Scenario s = scenario();
  // chat and chat2 in 40 GiB instances of their own: each engine takes 0.6 of 40 GiB, and its
  // cache what 24 GiB leave after the weights and activations.
  const std::vector<gpu::TenantId> ids{0, 1};
  const std::vector<MemoryPool> pools{{.bytes = std::int64_t{40} << 30, .name = "a"},
                                      {.bytes = std::int64_t{40} << 30, .name = "b"}};
  const auto placed = place_in_memory(s, ids, pools);
  for (const auto& p : placed) {
    ASSERT_TRUE(p.out_of_memory.empty()) << p.out_of_memory;
    ASSERT_TRUE(p.serving);
    EXPECT_DOUBLE_EQ(p.serving->budget, 0.6 * 40 * (1 << 30));
    EXPECT_LT(p.serving->cache.blocks, s.tenants[0].memory->cache.blocks);
  }
  // In 20 GiB, 0.6 is 12 GiB: the 15 GiB of weights do not fit, whatever else is there.
  const std::vector<MemoryPool> small{{.bytes = std::int64_t{20} << 30, .name = "MIG instance x"}};
  const std::vector<gpu::TenantId> one{0};
  const auto p = place_in_memory(s, one, small);
  EXPECT_THAT(p[0].out_of_memory, HasSubstr("out of memory: llama-3-8b needs"));
  EXPECT_THAT(p[0].out_of_memory, HasSubstr("in MIG instance x's 20.00 GiB"));
}

TEST(TenantMemory, AModeThatCannotHoldATenantReportsItAndRunsTheRest) {
  auto options = test::sim_run_options();
  auto r = run_scenario(scenario(), options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->modes.size(), 2u);
  for (const auto& t : r->modes[0].tenants) EXPECT_FALSE(t.out_of_memory) << t.name;  // exclusive
  const auto& mps = r->modes[1].tenants;
  EXPECT_FALSE(mps[0].out_of_memory);
  ASSERT_TRUE(mps[1].out_of_memory);
  EXPECT_FALSE(mps[1].inference.has_value());
  EXPECT_EQ(mps[1].kind, "inference");
  EXPECT_FALSE(mps[2].out_of_memory);
  EXPECT_GT(mps[0].inference->completed, 0u);
  EXPECT_GT(mps[2].training->iterations, 0u);
  EXPECT_THAT(metrics::format_table(*r), HasSubstr("mps chat2: out of memory: needs 48.00 GiB"));
  EXPECT_EQ(metrics::to_json(*r)["modes"][1]["tenants"][1]["out_of_memory"], *mps[1].out_of_memory);
}

TEST(TenantMemory, ATrainingJobLargerThanTheGpuIsOutOfMemoryEvenAlone) {
  std::string text = kScenario;
  text.replace(text.find("batch: 64"), 9, "batch: 65536");
  auto s = parse_scenario(text, "memory.yaml", ".");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  const std::vector<gpu::TenantId> trainer{2};
  const auto placed = place_in_memory(*s, trainer, whole_gpu(*s, 1));
  EXPECT_THAT(placed[0].out_of_memory, HasSubstr("out of memory: needs"));
  EXPECT_THAT(placed[0].out_of_memory, HasSubstr("activations"));
}

TEST(TenantMemory, UnderMigEachTenantRunsInItsInstancesMemory) {
  // On an H100: chat's share 0.42 asks for 3 of the 7 compute slices (3g.40gb), chat2's 0.28 for
  // 2 (2g.20gb), the trainer's 0.14 for 1 (1g.10gb): placed at memory slices 0, 4 and 6, as the
  // driver allows. chat's engine gets 0.6 of 40 GiB; chat2's 0.6 of 20 GiB cannot hold the 15 GiB
  // of weights; the trainer's estimate fits its 10 GiB.
  std::string text = kScenario;
  text.replace(text.find("modes: [exclusive, mps]"), 23, "modes: [mig]");
  text.replace(text.find("    kv_cache"), 0, "    sm_share: 0.42\n");
  text.replace(text.find("    kv_cache", text.find("chat2")), 0, "    sm_share: 0.28\n");
  text.replace(text.find("    batch: 64"), 0, "    sm_share: 0.14\n");
  auto s = parse_scenario(text, "memory.yaml", ".");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  auto options = test::sim_run_options();
  auto r = run_scenario(*s, options);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& mig = r->modes[0].tenants;
  ASSERT_TRUE(mig[0].memory) << (mig[0].out_of_memory ? *mig[0].out_of_memory : "");
  EXPECT_DOUBLE_EQ(mig[0].memory->budget, 0.6 * 40 * (1 << 30));
  EXPECT_GT(mig[0].inference->completed, 0u);
  ASSERT_TRUE(mig[1].out_of_memory);
  EXPECT_THAT(*mig[1].out_of_memory, HasSubstr("out of memory: llama-3-8b needs"));
  EXPECT_THAT(*mig[1].out_of_memory, HasSubstr("in MIG instance chat2 (2g.20gb)'s 20.00 GiB"));
  EXPECT_FALSE(mig[2].out_of_memory) << *mig[2].out_of_memory;
  EXPECT_GT(mig[2].training->iterations, 0u);
}

}  // namespace
}  // namespace tessera::scenario
