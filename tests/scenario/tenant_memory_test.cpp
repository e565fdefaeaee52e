// Which tenants a GPU's memory holds: in scenario order on a shared GPU, each alone under
// exclusive; a tenant that does not fit is reported as out of memory and the others run.

#include "tessera/scenario/tenant_memory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/backends/sim/gpu/sim_run_backend.hpp"
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

TEST(TenantMemory, TenantsHoldTheirBudgetWeightsOrTrainingEstimate) {
  const Scenario s = scenario();
  EXPECT_DOUBLE_EQ(tenant_memory(s.tenants[0]).bytes, 0.6 * 80 * (1 << 30));
  const auto& resnet = s.tenants[2].training.model;
  const auto est = mig::estimate_training(resnet, 64, mig::default_optimizer(resnet));
  EXPECT_DOUBLE_EQ(tenant_memory(s.tenants[2]).bytes, static_cast<double>(est.total()));
  EXPECT_THAT(tenant_memory(s.tenants[2]).parts, HasSubstr("optimizer state"));
}

TEST(TenantMemory, ATenantThatDoesNotFitBesideTheOnesBeforeItIsOutOfMemory) {
  const Scenario s = scenario();
  const std::vector<gpu::TenantId> all{0, 1, 2};
  const auto reasons = out_of_memory(s, all);
  ASSERT_EQ(reasons.size(), 3u);
  EXPECT_TRUE(reasons[0].empty());
  EXPECT_THAT(reasons[1], HasSubstr("out of memory: needs 48.00 GiB"));
  EXPECT_THAT(reasons[1], HasSubstr("32.00 GiB of the H100-SXM5-80GB's 80.00 GiB are free beside "
                                    "'chat' 48.00 GiB"));
  // chat2 holds nothing, so the trainer fits in what chat leaves.
  EXPECT_TRUE(reasons[2].empty()) << reasons[2];
  // Alone, each fits.
  for (gpu::TenantId id : all) {
    const std::vector<gpu::TenantId> one{id};
    EXPECT_TRUE(out_of_memory(s, one)[0].empty());
  }
}

TEST(TenantMemory, AModeThatCannotHoldATenantReportsItAndRunsTheRest) {
  RunOptions options;
  options.backend = [](const Scenario& run) {
    return core::Result<std::unique_ptr<device::RunBackend>>(
        sim::make_sim_run_backend(run.sim_overrides));
  };
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
  EXPECT_THAT(out_of_memory(*s, trainer)[0], HasSubstr("out of memory: needs"));
  EXPECT_THAT(out_of_memory(*s, trainer)[0], HasSubstr("activations"));
}

}  // namespace
}  // namespace tessera::scenario
