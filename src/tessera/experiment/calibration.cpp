#include "tessera/experiment/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::experiment {
namespace {

// Each distinct kernel (by name) of `seq`, in order of first appearance.
void add_distinct(const workload::KernelSequence& seq, std::string_view phase,
                  std::vector<CalibrationKernel>& out) {
  std::set<std::string_view> seen;
  for (const auto& group : seq.groups) {
    for (const auto& k : group.kernels) {
      if (seen.insert(k.name).second) {
        out.push_back({fmt::format("{}/{}", phase, k.name), k});
      }
    }
  }
}

bool is_memory_bound_class(workload::KernelClass c) {
  using workload::KernelClass;
  return c == KernelClass::kElementwise || c == KernelClass::kPointwise ||
         c == KernelClass::kNorm || c == KernelClass::kReduction || c == KernelClass::kOptimizer;
}

core::Status check_positive(int value, std::string_view field) {
  if (value >= 1) return {};
  return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                     "calibration {} must be at least 1, got {}", field, value);
}

}  // namespace

core::Result<std::vector<CalibrationKernel>> calibration_kernels(
    const CalibrationSetOptions& options) {
  TESSERA_TRY(check_positive(options.decode_batch, "decode_batch"));
  TESSERA_TRY(check_positive(options.decode_context, "decode_context"));
  TESSERA_TRY(check_positive(options.prefill_prompts, "prefill_prompts"));
  TESSERA_TRY(check_positive(options.prefill_length, "prefill_length"));
  TESSERA_TRY(check_positive(options.training_batch, "training_batch"));
  TESSERA_ASSIGN_OR_RETURN(const workload::ModelConfig model, workload::find_model(options.model));

  std::vector<CalibrationKernel> out;
  const std::vector<int> contexts(static_cast<std::size_t>(options.decode_batch),
                                  options.decode_context);
  add_distinct(workload::decode_step(model, contexts), "decode", out);
  const std::vector<int> prompts(static_cast<std::size_t>(options.prefill_prompts),
                                 options.prefill_length);
  add_distinct(workload::prefill_step(model, prompts), "prefill", out);

  // The training iteration's largest GEMM (by FLOPs) and largest memory-bound kernel (by bytes):
  // shapes the inference steps do not cover (large-M GEMMs, the optimizer's streaming update).
  const workload::KernelSequence train = workload::bert_base_iteration(options.training_batch);
  const workload::Kernel* gemm = nullptr;
  const workload::Kernel* memory = nullptr;
  for (const auto& group : train.groups) {
    for (const auto& k : group.kernels) {
      if (k.kind == workload::KernelClass::kGemm &&
          (gemm == nullptr || k.total_flops() > gemm->total_flops())) {
        gemm = &k;
      }
      if (is_memory_bound_class(k.kind) &&
          (memory == nullptr || k.total_bytes() > memory->total_bytes())) {
        memory = &k;
      }
    }
  }
  if (gemm != nullptr) out.push_back({fmt::format("training/{}", gemm->name), *gemm});
  if (memory != nullptr) out.push_back({fmt::format("training/{}", memory->name), *memory});
  return out;
}

core::Result<std::vector<core::Nanos>> time_kernels(device::GpuDevice& gpu, const RunToIdle& run,
                                                    std::span<const CalibrationKernel> kernels,
                                                    int repeat) {
  TESSERA_TRY(check_positive(repeat, "repeat"));
  TESSERA_ASSIGN_OR_RETURN(const device::StreamId stream, gpu.create_stream({}));
  std::vector<core::Nanos> medians;
  medians.reserve(kernels.size());
  for (const CalibrationKernel& ck : kernels) {
    const workload::KernelSequencePtr seq = workload::single_kernel(ck.kernel);
    std::vector<core::Nanos> times;
    for (int i = 0; i <= repeat; ++i) {  // launch 0 is the warm-up
      // A one-kernel submission starts and finishes with its kernel: finished - started is the
      // KernelEvent's end - start. Shared, so a launch that outlives this call (a device that
      // never finishes it) writes into memory that is still there.
      auto done = std::make_shared<std::optional<device::SubmissionDone>>();
      TESSERA_TRY(
          core::with_context(gpu.submit(stream, seq, static_cast<std::uint64_t>(i),
                                        [done](const device::SubmissionDone& d) { *done = d; }),
                             ck.label));
      TESSERA_TRY(core::with_context(run(), ck.label));
      if (!done->has_value()) {
        return core::failf(core::Domain::kDevice, core::Code::kInternal,
                           "{}: the launch did not finish (the device went idle or its deadline "
                           "passed without reporting it)",
                           ck.label);
      }
      if (i > 0) times.push_back((*done)->finished - (*done)->started);
    }
    std::sort(times.begin(), times.end());
    // Nearest-rank median (the lower middle for an even count): always a measured value.
    medians.push_back(times[(times.size() - 1) / 2]);
  }
  return medians;
}

core::Result<CalibrationReport> calibrate(device::GpuDevice& measured, const RunToIdle& run,
                                          std::span<const CalibrationKernel> kernels,
                                          const CalibrationOptions& options) {
  if (kernels.empty()) {
    return core::fail(core::Domain::kConfig, core::Code::kInvalidArgument,
                      "calibration needs at least one kernel");
  }
  TESSERA_ASSIGN_OR_RETURN(const std::vector<core::Nanos> real,
                           core::with_context(time_kernels(measured, run, kernels, options.repeat),
                                              "timing the measured device"));

  sim::Engine engine;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<sim::SimGpu> reference,
                           sim::SimGpu::create(engine, measured.spec(), options.sim));
  const RunToIdle run_sim = [&engine]() -> core::Status {
    engine.run_until(core::kNever);
    return {};
  };
  TESSERA_ASSIGN_OR_RETURN(
      const std::vector<core::Nanos> simulated,
      core::with_context(time_kernels(*reference, run_sim, kernels, options.repeat),
                         "timing the simulated GPU"));

  CalibrationReport report;
  report.gpu = measured.spec().name;
  report.backend = options.backend;
  report.measured_clock_mhz = measured.clock_mhz();
  report.simulated_clock_mhz = reference->clock_mhz();
  report.repeat = options.repeat;
  std::vector<double> abs_errors;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    CalibrationRow row;
    row.label = kernels[i].label;
    row.kind = std::string(workload::to_string(kernels[i].kernel.kind));
    row.flops = kernels[i].kernel.total_flops();
    row.bytes = kernels[i].kernel.total_bytes();
    row.measured = real[i];
    row.simulated = simulated[i];
    if (row.measured <= 0) {
      return core::failf(core::Domain::kDevice, core::Code::kInternal,
                         "{}: the measured device reported a duration of {} ns", row.label,
                         row.measured);
    }
    row.relative_error =
        static_cast<double>(row.simulated - row.measured) / static_cast<double>(row.measured);
    abs_errors.push_back(std::abs(row.relative_error));
    report.rows.push_back(std::move(row));
  }
  const metrics::Percentiles p = metrics::summarize(std::move(abs_errors));
  report.median_abs_error = p.p50;
  report.p90_abs_error = p.p90;
  return report;
}

std::string format_calibration(const CalibrationReport& r) {
  std::string out = fmt::format(
      "Calibration on {} ({} backend, {:.0f} MHz) against the simulated GPU ({:.0f} MHz); "
      "median of {} launches per kernel\n",
      r.gpu, r.backend, r.measured_clock_mhz, r.simulated_clock_mhz, r.repeat);
  std::size_t width = 6;
  for (const auto& row : r.rows) width = std::max(width, row.label.size());
  out += fmt::format("{:<{}}  {:>12}  {:>12}  {:>9}\n", "kernel", width, "measured us",
                     "simulated us", "error");
  for (const auto& row : r.rows) {
    out += fmt::format("{:<{}}  {:>12.2f}  {:>12.2f}  {:>+8.1f}%\n", row.label, width,
                       static_cast<double>(row.measured) / 1e3,
                       static_cast<double>(row.simulated) / 1e3, row.relative_error * 100);
  }
  out += fmt::format("|error| over {} kernels: median {:.1f}%, P90 {:.1f}%\n", r.rows.size(),
                     r.median_abs_error * 100, r.p90_abs_error * 100);
  return out;
}

nlohmann::json to_json(const CalibrationReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"kernel", row.label},
                    {"class", row.kind},
                    {"flops", row.flops},
                    {"bytes", row.bytes},
                    {"measured_ns", row.measured},
                    {"simulated_ns", row.simulated},
                    {"relative_error", row.relative_error}});
  }
  return {{"gpu", r.gpu},
          {"backend", r.backend},
          {"measured_clock_mhz", r.measured_clock_mhz},
          {"simulated_clock_mhz", r.simulated_clock_mhz},
          {"repeat", r.repeat},
          {"kernels", rows},
          {"median_abs_error", r.median_abs_error},
          {"p90_abs_error", r.p90_abs_error}};
}

}  // namespace tessera::experiment
