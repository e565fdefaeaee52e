// Calibration of the simulated GPU against a measured device, here another SimGpu whose clock
// differs: compute-bound kernels then show the clock ratio as their error, memory-bound ones none.

#include "tessera/experiment/calibration.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::experiment {
namespace {

using ::testing::HasSubstr;

// No launch overhead: a kernel's time is then its compute or DRAM time alone.
sim::SimGpuOptions no_overhead() {
  sim::SimGpuOptions o;
  o.launch_overhead = 0;
  return o;
}

workload::Kernel compute_kernel(std::string_view name, std::int64_t blocks, double flops) {
  workload::Kernel k;
  k.name = name;
  k.kind = workload::KernelClass::kGemm;
  k.pipe = workload::ComputePipe::kTensorFp16;
  k.blocks = blocks;
  k.flops_per_block = flops;
  return k;
}

workload::Kernel memory_kernel(std::string_view name, std::int64_t blocks, double bytes) {
  workload::Kernel k;
  k.name = name;
  k.kind = workload::KernelClass::kElementwise;
  k.blocks = blocks;
  k.bytes_per_block = bytes;
  return k;
}

std::vector<CalibrationKernel> synthetic_set() {
  return {{"test/gemm_small", compute_kernel("gemm_small", 132, 4e9)},
          {"test/gemm_waves", compute_kernel("gemm_waves", 1000, 2e9)},
          {"test/gemm_one_block", compute_kernel("gemm_one_block", 1, 1e10)},
          {"test/stream", memory_kernel("stream", 4096, 1 << 20)}};
}

struct MeasuredSim {
  sim::Engine engine;
  std::unique_ptr<sim::SimGpu> gpu;
  RunToIdle run = [this]() -> core::Status {
    engine.run_until(core::kNever);
    return {};
  };
};

std::unique_ptr<MeasuredSim> measured_sim(double clock_fraction) {
  auto m = std::make_unique<MeasuredSim>();
  auto spec = hw::find_gpu("h100");
  EXPECT_TRUE(spec) << spec.error().message();
  auto gpu = sim::SimGpu::create(m->engine, spec.value(), no_overhead());
  EXPECT_TRUE(gpu) << gpu.error().message();
  m->gpu = std::move(gpu.value());
  EXPECT_TRUE(m->gpu->set_clock_mhz(spec->boost_clock_mhz * clock_fraction));
  return m;
}

TEST(CalibrationKernels, TakesDecodePrefillAndTrainingKernelsOnceEach) {
  auto kernels = calibration_kernels();
  ASSERT_TRUE(kernels) << kernels.error().message();
  std::set<std::string> labels;
  int decode = 0, prefill = 0, training = 0, gemms = 0, memory = 0;
  for (const auto& k : *kernels) {
    EXPECT_TRUE(labels.insert(k.label).second) << "repeated: " << k.label;
    decode += k.label.starts_with("decode/");
    prefill += k.label.starts_with("prefill/");
    training += k.label.starts_with("training/");
    gemms += k.kernel.kind == workload::KernelClass::kGemm;
    memory += k.kernel.kind == workload::KernelClass::kElementwise ||
              k.kernel.kind == workload::KernelClass::kNorm;
    EXPECT_GT(k.kernel.blocks, 0) << k.label;
  }
  EXPECT_GE(decode, 4);
  EXPECT_GE(prefill, 4);
  EXPECT_EQ(training, 2);
  EXPECT_GE(gemms, 3);
  EXPECT_GE(memory, 2);
  EXPECT_TRUE(labels.contains("decode/paged_attention_v1") ||
              labels.contains("decode/paged_attention_v2"));
  EXPECT_TRUE(labels.contains("prefill/flash_attention_prefill"));
}

TEST(CalibrationKernels, AnUnknownModelOrABadShapeIsAnError) {
  CalibrationSetOptions unknown_model;
  unknown_model.model = "gpt-17";
  auto unknown = calibration_kernels(unknown_model);
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message(), HasSubstr("gpt-17"));
  CalibrationSetOptions no_batch;
  no_batch.decode_batch = 0;
  auto bad = calibration_kernels(no_batch);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("decode_batch"));
}

TEST(Calibration, ASlowerClockShowsAsTheClockRatioOnComputeKernelsAndNotOnMemoryKernels) {
  auto measured = measured_sim(0.75);
  const auto kernels = synthetic_set();
  auto report = calibrate(*measured->gpu, measured->run, kernels,
                          {.repeat = 3, .sim = no_overhead(), .backend = "sim"});
  ASSERT_TRUE(report) << report.error().message();
  ASSERT_EQ(report->rows.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const CalibrationRow& row = report->rows[i];
    // simulated / measured = f_measured / f_simulated: the error is 0.75 - 1.
    EXPECT_NEAR(row.relative_error, -0.25, 1e-3) << row.label;
    EXPECT_GT(row.measured, row.simulated) << row.label;
  }
  EXPECT_NEAR(report->rows[3].relative_error, 0.0, 1e-6) << "DRAM time is clock-independent";
  EXPECT_NEAR(report->median_abs_error, 0.25, 1e-3);
  EXPECT_NEAR(report->p90_abs_error, 0.25, 1e-3);
  EXPECT_DOUBLE_EQ(report->measured_clock_mhz, report->simulated_clock_mhz * 0.75);
  EXPECT_EQ(report->gpu, "H100-SXM5-80GB");
  EXPECT_EQ(report->repeat, 3);
}

TEST(Calibration, TheSameClockGivesNoError) {
  auto measured = measured_sim(1.0);
  auto kernels = calibration_kernels();
  ASSERT_TRUE(kernels) << kernels.error().message();
  auto report = calibrate(*measured->gpu, measured->run, *kernels,
                          {.repeat = 1, .sim = no_overhead(), .backend = "sim"});
  ASSERT_TRUE(report) << report.error().message();
  ASSERT_EQ(report->rows.size(), kernels->size());
  for (const auto& row : report->rows) {
    EXPECT_EQ(row.measured, row.simulated) << row.label;
    EXPECT_GT(row.measured, 0) << row.label;
  }
  EXPECT_EQ(report->median_abs_error, 0);
  EXPECT_EQ(report->p90_abs_error, 0);
}

TEST(Calibration, TimesEachLaunchAfterAWarmUpAndTakesTheMedian) {
  auto measured = measured_sim(1.0);
  const auto kernels = synthetic_set();
  auto times = time_kernels(*measured->gpu, measured->run, kernels, 4);
  ASSERT_TRUE(times) << times.error().message();
  ASSERT_EQ(times->size(), kernels.size());
  // Warm-up plus four timed launches of each kernel.
  EXPECT_EQ(measured->gpu->stats().kernels_completed, 5 * 4);
}

TEST(Calibration, RejectsNoKernelsAndNoRepeats) {
  auto measured = measured_sim(1.0);
  auto none = calibrate(*measured->gpu, measured->run, {}, {});
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message(), HasSubstr("at least one kernel"));
  const auto kernels = synthetic_set();
  CalibrationOptions no_repeats;
  no_repeats.repeat = 0;
  auto zero = calibrate(*measured->gpu, measured->run, kernels, no_repeats);
  ASSERT_FALSE(zero);
  EXPECT_THAT(zero.error().message(), HasSubstr("repeat"));
}

TEST(Calibration, AKernelTheDeviceRejectsIsAnErrorNamingIt) {
  auto measured = measured_sim(1.0);
  workload::Kernel huge = compute_kernel("huge", 1, 1e6);
  huge.block.threads = 4096;  // over every GPU's 1024 threads per block
  const std::vector<CalibrationKernel> kernels = {{"test/huge", huge}};
  auto report = calibrate(*measured->gpu, measured->run, kernels, {});
  ASSERT_FALSE(report);
  EXPECT_THAT(report.error().message(), HasSubstr("test/huge"));
}

TEST(Calibration, ADeviceThatReportsNoKernelIsAnError) {
  auto measured = measured_sim(1.0);
  const RunToIdle stalled = [] { return core::Status{}; };  // never runs the engine
  auto report = calibrate(*measured->gpu, stalled, synthetic_set(), {});
  ASSERT_FALSE(report);
  EXPECT_THAT(report.error().message(), HasSubstr("test/gemm_small: the launch did not finish"));
}

TEST(Calibration, TableAndJsonCarryEveryKernelAndTheSummary) {
  auto measured = measured_sim(0.5);
  auto report = calibrate(*measured->gpu, measured->run, synthetic_set(),
                          {.repeat = 1, .sim = no_overhead(), .backend = "sim"});
  ASSERT_TRUE(report) << report.error().message();
  const std::string text = format_calibration(*report);
  EXPECT_THAT(text, HasSubstr("H100-SXM5-80GB"));
  EXPECT_THAT(text, HasSubstr("test/gemm_waves"));
  EXPECT_THAT(text, HasSubstr("-50.0%"));
  EXPECT_THAT(text, HasSubstr("median 50.0%, P90 50.0%"));

  const nlohmann::json j = to_json(*report);
  EXPECT_EQ(j.at("gpu"), "H100-SXM5-80GB");
  EXPECT_EQ(j.at("backend"), "sim");
  EXPECT_EQ(j.at("repeat"), 1);
  ASSERT_EQ(j.at("kernels").size(), 4u);
  const nlohmann::json& first = j.at("kernels").at(0);
  EXPECT_EQ(first.at("kernel"), "test/gemm_small");
  EXPECT_EQ(first.at("class"), "gemm");
  EXPECT_EQ(first.at("measured_ns").get<core::Nanos>(), report->rows[0].measured);
  EXPECT_EQ(first.at("simulated_ns").get<core::Nanos>(), report->rows[0].simulated);
  EXPECT_NEAR(first.at("relative_error").get<double>(), -0.5, 1e-3);
  EXPECT_NEAR(j.at("median_abs_error").get<double>(), 0.5, 1e-3);
  EXPECT_NEAR(j.at("p90_abs_error").get<double>(), 0.5, 1e-3);
  // Round trip through text stays valid JSON.
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);
}

}  // namespace
}  // namespace tessera::experiment
