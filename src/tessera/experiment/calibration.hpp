#pragma once
// Calibration: the simulated GPU's kernel times against measured ones, for the same kernels.
//
// Each kernel of a fixed set (the decode and prefill kernels of one catalog model, plus the
// largest GEMM and the largest memory-bound kernel of a BERT-base training iteration, all from the
// workload builders) runs alone, one launch at a time, on a device under test: one warm-up
// launch, then `repeat` timed ones, median of the launch's end - start (the submission's
// finished - started, which for one kernel is its KernelEvent's end - start). The same kernels run
// the same way on a sim::SimGpu with the device's spec. Per kernel: measured, simulated and the
// relative error (simulated - measured) / measured; over all kernels: the median and P90 of its
// absolute value.
//
// Works on any device::GpuDevice. On cuda::CudaGpu every workload::Kernel runs as tessera_emulate,
// which does the kernel's FLOPs and DRAM bytes: that calibrates the simulator against the
// emulation kernel, not against cuBLAS or FlashAttention.

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::experiment {

struct CalibrationKernel {
  std::string label;  // "<phase>/<kernel name>", e.g. "decode/paged_attention_v1"
  workload::Kernel kernel;
};

// The workload shapes the kernel set comes from. Every figure is an ASSUMPTION chosen to be a
// typical serving and training point, not a measured one.
struct CalibrationSetOptions {
  std::string model = "llama-3-8b";  // a workload::model_catalog() key
  int decode_batch = 16;             // sequences in one decode step
  int decode_context = 1024;         // tokens already in each sequence's KV cache
  int prefill_prompts = 4;           // prompts in one prefill batch
  int prefill_length = 512;          // tokens per prompt
  int training_batch = 32;           // BERT-base training iteration (sequence length 128)
};

// The kernels to calibrate, each once (a decoder layer's kernels appear once, not per layer).
core::Result<std::vector<CalibrationKernel>> calibration_kernels(
    const CalibrationSetOptions& options = {});

// Drives the device until everything submitted to it has finished (the simulator: run the
// engine; a real GPU: poll until idle).
using RunToIdle = std::function<core::Status()>;

// Median duration (end - start) of each kernel run alone on `gpu` (whole device, one new stream):
// one warm-up launch, then `repeat` launches. Adds nothing to the device that outlives the call.
core::Result<std::vector<core::Nanos>> time_kernels(device::GpuDevice& gpu, const RunToIdle& run,
                                                    std::span<const CalibrationKernel> kernels,
                                                    int repeat);

struct CalibrationOptions {
  int repeat = 5;          // ASSUMPTION: enough for a stable median of microsecond kernels
  sim::SimGpuOptions sim;  // the simulated reference's model assumptions
  std::string backend;     // what the measured device is, for the report ("cuda", "sim")
};

struct CalibrationRow {
  std::string label;
  std::string kind;  // workload::KernelClass
  double flops = 0;
  double bytes = 0;
  core::Nanos measured = 0;
  core::Nanos simulated = 0;
  double relative_error = 0;  // (simulated - measured) / measured
};

struct CalibrationReport {
  std::string gpu;      // the spec both devices use
  std::string backend;  // of the measured device
  double measured_clock_mhz = 0;
  double simulated_clock_mhz = 0;
  int repeat = 0;
  std::vector<CalibrationRow> rows;
  double median_abs_error = 0;  // nearest-rank, over rows
  double p90_abs_error = 0;
};

// Times `kernels` on `measured` and on a fresh SimGpu with measured.spec() and options.sim.
core::Result<CalibrationReport> calibrate(device::GpuDevice& measured, const RunToIdle& run,
                                          std::span<const CalibrationKernel> kernels,
                                          const CalibrationOptions& options = {});

std::string format_calibration(const CalibrationReport& report);
nlohmann::json to_json(const CalibrationReport& report);

}  // namespace tessera::experiment
