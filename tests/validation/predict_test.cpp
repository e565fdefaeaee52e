#include "tessera/validation/predict.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/validation/profile_readers.hpp"
#include "tessera/validation/report.hpp"
#include "tessera/validation/split.hpp"
#include "tessera/workload/kernels/gemm_shapes.hpp"

namespace tessera::validation {
namespace {

using ::testing::HasSubstr;

Measurement gemm_row(std::int64_t m, double measured_ns, std::string source = "mine.csv:2") {
  Measurement r;
  r.source = std::move(source);
  r.gpu = "H100-SXM5-80GB";
  r.kind = MeasuredKind::kGemm;
  r.m = m;
  r.n = 4096;
  r.k = 4096;
  r.measured_ns = measured_ns;
  return r;
}

Measurement layer_row(std::vector<std::string> kernels) {
  Measurement r;
  r.source = "mine.csv:3";
  r.gpu = "A100-SXM4-80GB";
  r.kind = MeasuredKind::kLayerKernels;
  r.model = *workload::find_model("llama-2-7b");
  r.lengths = {512};
  r.layer_kernels = std::move(kernels);
  r.measured_ns = 1e5;
  return r;
}

TEST(Predict, AGemmRowRunsTheBuildersGemmAloneOnTheMeasuredGpu) {
  Predictor p;
  const auto seq = p.kernels(gemm_row(512, 1e5));
  ASSERT_TRUE(seq.has_value()) << seq.error().message();
  ASSERT_EQ(seq->groups.size(), 1u);
  const workload::Kernel& k = seq->groups[0].kernels.at(0);
  EXPECT_EQ(k.gemm.m, 512);
  EXPECT_DOUBLE_EQ(k.total_flops(), 2.0 * 512 * 4096 * 4096);
  const auto ns = p.simulate_ns(gemm_row(512, 1e5));
  ASSERT_TRUE(ns.has_value()) << ns.error().message();
  // The same kernel submitted by hand takes the same time.
  const auto direct = p.time_sequence("H100-SXM5-80GB", *seq);
  ASSERT_TRUE(direct.has_value());
  EXPECT_DOUBLE_EQ(*ns, *direct);
  // 17.2 GFLOP cannot take less than 17.4 us at 989 TFLOP/s, nor the simulator less than that.
  EXPECT_GT(*ns, 17.3e3);
}

TEST(Predict, ARowSayingItsLibraryHasStreamKIsTimedWithIt) {
  // 4096 x 4096 from 512 to 520 rows: 128 128x128 tiles fill the H100's 132 SMs once, 160 spill
  // into a second wave. Whole tiles in waves jump there; Stream-K grows by about 160 / 128.
  Predictor p;
  Measurement before = gemm_row(512, 1e5);
  Measurement after = gemm_row(520, 1e5);
  const auto waves_before = p.simulate_ns(before);
  const auto waves_after = p.simulate_ns(after);
  before.gemm_stream_k = after.gemm_stream_k = true;
  const auto stream_k_before = p.simulate_ns(before);
  const auto stream_k_after = p.simulate_ns(after);
  ASSERT_TRUE(waves_before && waves_after && stream_k_before && stream_k_after);
  EXPECT_GT(*waves_after / *waves_before, 1.3);
  EXPECT_LT(*stream_k_after / *stream_k_before, 1.25);
  EXPECT_LT(*stream_k_after, *waves_after);
  // The calibration's own setting (no Stream-K) is untouched for rows that say nothing.
  EXPECT_DOUBLE_EQ(*p.simulate_ns(gemm_row(520, 1e5)), *waves_after);
  // Reports name the library a row declares.
  EXPECT_EQ(describe(after), "bf16 m=520 n=4096 k=4096 (stream-k)");
  EXPECT_EQ(describe(gemm_row(520, 1e5)), "bf16 m=520 n=4096 k=4096");
}

Measurement all_reduce_row(std::string gpu, int gpus, std::string interconnect) {
  Measurement r;
  r.source = "mine.csv:4";
  r.gpu = std::move(gpu);
  r.kind = MeasuredKind::kCollective;
  r.collective = Collective::kAllReduce;
  r.bytes = std::int64_t{256} << 20;
  r.gpus = gpus;
  r.interconnect = std::move(interconnect);
  r.measured_ns = 1e6;
  return r;
}

TEST(Predict, PairwiseMachinesBridgePairsAndCrossPcieBetweenThem) {
  Predictor p;
  const auto time = [&p](std::string gpu, int gpus, std::string interconnect) {
    const auto ns = p.simulate_ns(all_reduce_row(std::move(gpu), gpus, std::move(interconnect)));
    EXPECT_TRUE(ns.has_value()) << ns.error().message();
    return ns.value_or(0);
  };
  // The bridge carries 300 GB/s a direction: the A100's NVLink rate, two thirds of the H100's.
  EXPECT_DOUBLE_EQ(time("A100-SXM4-80GB", 2, "nvlink-pairwise"),
                   time("A100-SXM4-80GB", 2, "nvswitch"));
  EXPECT_GT(time("H100-SXM5-80GB", 2, "nvlink-pairwise"),
            1.3 * time("H100-SXM5-80GB", 2, "nvswitch"));
  // Four GPUs cross PCIe between the pairs: Gen5 on the H100, twice Gen4's rate on the A100.
  EXPECT_GT(time("A100-SXM4-80GB", 4, "nvlink-pairwise"),
            1.8 * time("H100-SXM5-80GB", 4, "nvlink-pairwise"));
  EXPECT_GT(time("H100-SXM5-80GB", 4, "nvlink-pairwise"),
            4 * time("H100-SXM5-80GB", 4, "nvswitch"));
}

TEST(Predict, LayerRowsSumTheNamedKernelsOfOneLayer) {
  Predictor p;
  const auto one = p.simulate_ns(layer_row({"qkv_proj"}));
  const auto two = p.simulate_ns(layer_row({"qkv_proj", "o_proj"}));
  const auto o = p.simulate_ns(layer_row({"o_proj"}));
  ASSERT_TRUE(one && two && o);
  EXPECT_DOUBLE_EQ(*two, *one + *o);
  const auto missing = p.simulate_ns(layer_row({"no_such_kernel"}));
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message(), HasSubstr("mine.csv:3"));
  EXPECT_THAT(missing.error().message(), HasSubstr("no_such_kernel"));
}

TEST(Predict, ARowTimedFromTheHostAddsTheBenchmarksCostOfACall) {
  Measurement row = layer_row({std::string(kAttentionKernels)});
  row.gpu = "H100-SXM5-80GB";
  Predictor fitted({}, {}, true, {}, {{row.gpu, HarnessCosts{.host_call = 20000}}});
  const double kernels = *fitted.simulate_ns(row);
  row.host_timed_call = true;
  EXPECT_DOUBLE_EQ(*fitted.simulate_ns(row), kernels + 20000);
  // Without a fit: the calibration's cost for the board, and none with the generic assumptions.
  Predictor calibrated;
  EXPECT_GT(calibrated.harness_costs(row.gpu).host_call, 0);
  Predictor generic({}, {}, false);
  EXPECT_EQ(generic.harness_costs(row.gpu).host_call, 0);
  const double timed_from_host = *generic.simulate_ns(row);
  row.host_timed_call = false;
  EXPECT_DOUBLE_EQ(*generic.simulate_ns(row), timed_from_host);
}

TEST(Predict, CategoriesFollowTheWorkNotTheSource) {
  EXPECT_EQ(category(gemm_row(64, 1)), "GEMM, M <= 64");
  EXPECT_EQ(category(gemm_row(65, 1)), "GEMM, 64 < M <= 1024");
  EXPECT_EQ(category(gemm_row(4096, 1)), "GEMM, M > 1024");
  EXPECT_EQ(category(layer_row({"qkv_proj"})), "GEMM, 64 < M <= 1024");  // 512 tokens
  EXPECT_EQ(category(layer_row({"input_rmsnorm"})), "elementwise, norm");
  EXPECT_EQ(category(layer_row({std::string(kAttentionKernels)})), "attention, prefill");
}

TEST(Predict, RowsFasterThanThePeaksAllowAndEagerNormsAreNotCompared) {
  Predictor p;
  // 137 GFLOP in 10 us would be 13.7 PFLOP/s.
  const auto fast = p.implausible(gemm_row(4096, 1e4));
  ASSERT_TRUE(fast.has_value());
  EXPECT_THAT(*fast, HasSubstr("faster than the GPU's datasheet peaks"));
  EXPECT_FALSE(p.implausible(gemm_row(4096, 1e6)).has_value());
  Measurement eager = layer_row({"input_rmsnorm"});
  eager.implementation = Implementation::kHfEager;
  EXPECT_TRUE(Predictor::unsupported(eager).has_value());
  eager.layer_kernels = {"qkv_proj"};  // an nn.Linear is one GEMM whoever launches it
  EXPECT_FALSE(Predictor::unsupported(eager).has_value());
}

TEST(Split, OnlyTheNamedModelsShapesAndMachinesAreFittedOn) {
  Measurement r = layer_row({"qkv_proj"});
  r.source = "vidur_compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv:2 attn_pre_proj";
  EXPECT_TRUE(fitted_on(r));
  r.source = "vidur_compute/a100/meta-llama/Meta-Llama-3-8B/mlp.csv:2 attn_pre_proj";
  EXPECT_FALSE(fitted_on(r));
  Measurement g = gemm_row(8, 1, "inference_sim_kernels_h100/gemm/h100/data.csv:2");
  g.n = 6144;
  EXPECT_TRUE(fitted_on(g));
  g.n = 11008;
  EXPECT_FALSE(fitted_on(g));
  EXPECT_FALSE(fitted_on(gemm_row(8, 1, "llmservingsim_h100/x/layers.csv:2")));
  EXPECT_FALSE(fitted_on(gemm_row(8, 1, "/home/me/measured.csv:2")));
}

TEST(Report, StatisticsAreOverTheRowsNotFittedOnAndNameTheWorst) {
  MeasurementSet set;
  Predictor truth;
  // Rows measured at the simulator's own time times 1.0, 1.1, 1.2, 1.3 and 2.0 (the worst).
  const double base = *truth.simulate_ns(gemm_row(2048, 1));
  const double factors[] = {1.0, 1.1, 1.2, 1.3, 2.0};
  int line = 2;
  for (double f : factors) {
    set.rows.push_back(gemm_row(2048, base * f, fmt::format("mine.csv:{}", line++)));
  }
  // A fitted-on row with a huge error stays out of the held-out figures.
  Measurement fitted = gemm_row(2048, base * 10, "inference_sim_kernels_h100/gemm/h100/data.csv:9");
  fitted.n = 6144;
  set.rows.push_back(fitted);
  Predictor p;
  const auto report = validate(std::move(set), p, 2);
  ASSERT_TRUE(report.has_value()) << report.error().message();
  ASSERT_EQ(report->categories.size(), 1u);
  const CategoryStats& c = report->categories[0];
  EXPECT_EQ(c.rows, 5u);
  EXPECT_EQ(c.fitted_rows, 1u);
  // |1/f - 1|: 0, 0.0909, 0.1667, 0.2308, 0.5; nearest rank: median the 3rd, P90 the 5th.
  EXPECT_NEAR(c.median_abs_error, 1 - 1 / 1.2, 1e-9);
  EXPECT_NEAR(c.p90_abs_error, 0.5, 1e-9);
  ASSERT_EQ(c.worst.size(), 2u);
  EXPECT_EQ(report->rows[c.worst[0]].measurement.source, "mine.csv:6");
  const std::string text = format_report(*report);
  EXPECT_THAT(text, HasSubstr("mine.csv:6"));
  EXPECT_THAT(text, HasSubstr("GEMM, M > 1024"));
  EXPECT_THAT(to_csv(*report), HasSubstr("mine.csv:2,H100-SXM5-80GB,\"GEMM, M > 1024\""));
  // A user's file is its own source in the per-source table; a shared profile its family.
  ASSERT_EQ(report->sources.size(), 1u);
  EXPECT_EQ(report->sources[0].source, "mine.csv");
  EXPECT_EQ(report->sources[0].rows, 5u);
  EXPECT_EQ(profile_family("vidur_compute/a100/x/mlp.csv:2 add"), "vidur_compute");
  EXPECT_EQ(profile_family("tests/cli/validate/measured.csv:2"), "");
}

}  // namespace
}  // namespace tessera::validation
