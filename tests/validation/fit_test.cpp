#include "tessera/validation/fit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "tessera/validation/predict.hpp"

namespace tessera::validation {
namespace {

using ::testing::HasSubstr;

// Rows "measured" by the simulator itself with known options, from a source the split fits on:
// a fit from the generic assumptions must find options that reproduce them.
MeasurementSet synthetic(const sim::SimGpuOverrides& truth) {
  Predictor measure(truth, {}, false);
  MeasurementSet set;
  const auto model = *workload::find_model("llama-2-7b");
  int line = 2;
  for (int tokens : {1, 16, 64, 256, 1024, 4096}) {
    for (const char* kernel :
         {"qkv_proj", "down_proj", "input_rmsnorm", "silu_and_mul", "residual_add", "embedding"}) {
      Measurement m;
      m.source = fmt::format("vidur_compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv:{} x", line++);
      m.gpu = "A100-SXM4-80GB";
      m.kind = MeasuredKind::kLayerKernels;
      m.model = model;
      m.lengths = {tokens};
      m.layer_kernels = {kernel};
      m.measured_ns = *measure.simulate_ns(m);
      set.rows.push_back(std::move(m));
    }
  }
  return set;
}

TEST(Fit, RecoversTheOptionsThatMadeTheRows) {
  sim::SimGpuOverrides truth;
  truth.launch_overhead = 2000;
  truth.elementwise_bandwidth_fraction = 0.6;
  truth.pointwise_bandwidth_fraction = 0.9;
  truth.norm_bandwidth_fraction = 0.4;
  truth.gather_bandwidth_fraction = 0.2;
  truth.gemm_tile_selection = true;
  truth.gemm_compute_fraction = 0.75;
  truth.achievable_bandwidth_fraction = 0.8;
  const auto fits = fit(synthetic(truth));
  ASSERT_TRUE(fits.has_value()) << fits.error().message();
  ASSERT_EQ(fits->size(), 1u);
  const GpuFit& g = fits->front();
  EXPECT_EQ(g.gpu, "A100-SXM4-80GB");
  // Memory-bound kernels, embedding gathers and GEMMs; no attention or collectives.
  ASSERT_EQ(g.groups.size(), 3u);
  for (const GroupFit& group : g.groups) {
    EXPECT_LT(group.loss_after, group.loss_before / 20) << group.group;
    EXPECT_LT(group.loss_after, 1e-3) << group.group;
  }
  ASSERT_TRUE(g.overrides.gemm_compute_fraction.has_value());
  EXPECT_NEAR(*g.overrides.gemm_compute_fraction, 0.75, 0.03);
  ASSERT_TRUE(g.overrides.elementwise_bandwidth_fraction.has_value());
  EXPECT_NEAR(*g.overrides.elementwise_bandwidth_fraction, 0.6, 0.03);
  ASSERT_TRUE(g.overrides.pointwise_bandwidth_fraction.has_value());
  EXPECT_NEAR(*g.overrides.pointwise_bandwidth_fraction, 0.9, 0.03);
  ASSERT_TRUE(g.overrides.norm_bandwidth_fraction.has_value());
  EXPECT_NEAR(*g.overrides.norm_bandwidth_fraction, 0.4, 0.03);
  ASSERT_TRUE(g.overrides.gather_bandwidth_fraction.has_value());
  EXPECT_NEAR(*g.overrides.gather_bandwidth_fraction, 0.2, 0.01);
  const std::string text = format_fit(*fits);
  EXPECT_THAT(text, HasSubstr("A100-SXM4-80GB:"));
  EXPECT_THAT(text, HasSubstr("as a scenario section: sim: {"));
}

TEST(Fit, TheStreamKLibraryIsFittedOnItsOwnRowsAndLeavesTheOtherLibraryAlone) {
  sim::SimGpuOverrides truth;
  truth.gemm_tile_selection = true;
  truth.stream_k_compute_fraction = 0.85;
  truth.stream_k_tile_knee = 10;
  truth.stream_k_fixed = 4000;
  Predictor measure(truth, {}, false);
  MeasurementSet set;
  int line = 2;
  for (std::int64_t m : {1, 64, 300, 520, 1024, 2048, 4096, 8192}) {
    for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096},
                               {1024, 1024},  // at small M, mostly the fixed cost
                               {6144, 4096},
                               {4096, 14336},
                               {28672, 4096}}) {
      Measurement row;
      row.source =
          fmt::format("llmservingsim_h100/meta-llama/Llama-3.1-8B/tp1/layers.csv:{}", line++);
      row.gpu = "H100-SXM5-80GB";
      row.kind = MeasuredKind::kGemm;
      row.m = m;
      row.n = n;
      row.k = k;
      row.gemm_stream_k = true;
      row.measured_ns = *measure.simulate_ns(row);
      set.rows.push_back(std::move(row));
    }
  }
  const auto fits = fit(set);
  ASSERT_TRUE(fits.has_value()) << fits.error().message();
  ASSERT_EQ(fits->size(), 1u);
  const GpuFit& g = fits->front();
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups.front().group, "GEMM, Stream-K library");
  EXPECT_LT(g.groups.front().loss_after, 1e-3);
  ASSERT_TRUE(g.overrides.stream_k_compute_fraction.has_value());
  EXPECT_NEAR(*g.overrides.stream_k_compute_fraction, 0.85, 0.03);
  ASSERT_TRUE(g.overrides.stream_k_fixed.has_value());
  EXPECT_NEAR(static_cast<double>(*g.overrides.stream_k_fixed), 4000, 400);
  EXPECT_FALSE(g.overrides.gemm_compute_fraction.has_value());
  EXPECT_FALSE(g.overrides.gemm_fixed.has_value());
}

TEST(Fit, AttentionFitsItsFractionsAndTheBenchmarksHostTimePerCall) {
  sim::SimGpuOverrides truth;
  truth.attention_compute_fraction = 0.7;
  truth.attention_bandwidth_fraction = 0.95;
  const std::string gpu = "H100-SXM5-80GB";
  Predictor measure(truth, {}, false, {}, {{gpu, HarnessCosts{.host_call = 15000}}});
  MeasurementSet set;
  int line = 2;
  const auto add = [&](workload::Phase phase, int batch, int length) {
    Measurement m;
    m.source =
        fmt::format("inference_sim_kernels_h100/mha/decode/h100/32-8-128-tp1.csv:{}", line++);
    m.gpu = gpu;
    m.kind = MeasuredKind::kLayerKernels;
    m.model = attention_model("attention-32-8-128", 32, 8, 128);
    m.phase = phase;
    m.lengths = std::vector<int>(static_cast<std::size_t>(batch), length);
    m.layer_kernels = {std::string(kAttentionKernels)};
    m.host_timed_call = true;
    m.measured_ns = *measure.simulate_ns(m);
    set.rows.push_back(std::move(m));
  };
  for (int length : {1024, 4096, 16384}) add(workload::Phase::kPrefill, 1, length);
  for (int batch : {1, 8, 64}) {
    for (int length : {512, 4096, 32768}) add(workload::Phase::kDecode, batch, length);
  }
  const auto fits = fit(set);
  ASSERT_TRUE(fits.has_value()) << fits.error().message();
  ASSERT_EQ(fits->size(), 1u);
  const GpuFit& g = fits->front();
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups.front().group, "attention");
  EXPECT_LT(g.groups.front().loss_after, 1e-3);
  ASSERT_TRUE(g.overrides.attention_bandwidth_fraction.has_value());
  EXPECT_NEAR(*g.overrides.attention_bandwidth_fraction, 0.95, 0.03);
  ASSERT_TRUE(g.overrides.attention_compute_fraction.has_value());
  EXPECT_NEAR(*g.overrides.attention_compute_fraction, 0.7, 0.05);
  ASSERT_TRUE(g.harness.has_value());
  EXPECT_NEAR(static_cast<double>(g.harness->host_call), 15000, 1500);
  // The host's time belongs to the benchmark: it is printed apart from the scenario section.
  const std::string text = format_fit(*fits);
  EXPECT_THAT(text, HasSubstr("host time per call"));
  const auto section = text.substr(text.find("as a scenario section"));
  EXPECT_THAT(section.substr(0, section.find('\n')), ::testing::Not(HasSubstr("host_call")));
}

TEST(Fit, RecoversTheEngineCostsThatMadeTheStepRows) {
  const workload::EngineCosts truth{
      .step = 3'000'000, .prefill = 8'000'000, .per_worker = 1'500'000, .per_sequence = 200'000};
  Predictor measure({}, {}, false, {{"A100-SXM4-80GB", truth}});
  MeasurementSet set;
  const auto model = *workload::find_model("llama-2-7b");
  int line = 2;
  for (int tp : {1, 2, 4}) {
    for (const auto& [phase, lengths] : std::vector<std::pair<workload::Phase, std::vector<int>>>{
             {workload::Phase::kPrefill, {128}},
             {workload::Phase::kPrefill, {512, 512}},
             {workload::Phase::kDecode, {600}},
             {workload::Phase::kDecode, std::vector<int>(16, 600)},
             {workload::Phase::kDecode, std::vector<int>(48, 600)}}) {
      Measurement m;
      m.source = fmt::format("splitwise_sim/perf_model.csv:{} token_time", line++);
      m.gpu = "A100-SXM4-80GB";
      m.kind = MeasuredKind::kStep;
      m.model = model;
      m.tensor_parallel = tp;
      m.phase = phase;
      m.lengths = lengths;
      m.measured_ns = *measure.simulate_ns(m);
      set.rows.push_back(std::move(m));
    }
  }
  const auto fits = fit(set);
  ASSERT_TRUE(fits.has_value()) << fits.error().message();
  ASSERT_EQ(fits->size(), 1u);
  const GpuFit& g = fits->front();
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups.front().group, kEngineGroup);
  EXPECT_LT(g.groups.front().loss_after, g.groups.front().loss_before / 20);
  ASSERT_TRUE(g.engine.has_value());
  EXPECT_NEAR(static_cast<double>(g.engine->step), 3e6, 0.3e6);
  EXPECT_NEAR(static_cast<double>(g.engine->prefill), 8e6, 0.5e6);
  EXPECT_NEAR(static_cast<double>(g.engine->per_worker), 1.5e6, 0.15e6);
  EXPECT_NEAR(static_cast<double>(g.engine->per_sequence), 2e5, 0.2e5);
  EXPECT_THAT(format_fit(*fits), HasSubstr("as an inference tenant's key: engine: {step: "));
}

TEST(Fit, RowsNotInTheSplitAreNotFittedOn) {
  MeasurementSet set = synthetic({});
  for (Measurement& m : set.rows) m.source = "mine.csv:2";
  const auto fits = fit(set);
  ASSERT_TRUE(fits.has_value());
  EXPECT_TRUE(fits->empty());
}

}  // namespace
}  // namespace tessera::validation
