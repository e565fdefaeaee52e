#include "tessera/cli/calibrate_command.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "tessera/backends/cuda/backend_status.hpp"
#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/calibration.hpp"
#include "tessera/hw/gpu_spec.hpp"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda/cuda_gpu.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/device/wall_clock_executor.hpp"
#endif

namespace tessera::cli {
namespace {

// ASSUMPTION: no calibration kernel runs for more than a second even at a locked low clock; a
// launch still unfinished after this long is reported instead of waited on.
constexpr core::Nanos kLaunchDeadline = core::seconds(30);

experiment::CalibrationOptions options_for(const CalibrateFlags& f) {
  experiment::CalibrationOptions o;
  o.repeat = f.repeat;
  o.backend = f.backend;
  return o;
}

core::Status report(const experiment::CalibrationReport& r, const CalibrateFlags& f) {
  if (f.json_path != "-") fmt::print("{}", experiment::format_calibration(r));
  if (!f.json_path.empty()) {
    TESSERA_TRY(write_text(f.json_path, experiment::to_json(r).dump(2)));
  }
  return {};
}

// A simulated GPU measured against the simulator: errors are zero with the same assumptions, so
// this checks the procedure and the output, not the model.
core::Status calibrate_sim(const CalibrateFlags& f,
                           std::span<const experiment::CalibrationKernel> kernels) {
  TESSERA_ASSIGN_OR_RETURN(
      const hw::GpuSpec spec,
      core::with_context(hw::find_gpu(f.gpu.empty() ? "h100" : f.gpu), "--gpu"));
  sim::Engine engine;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<sim::SimGpu> gpu,
                           sim::SimGpu::create(engine, spec, sim::default_options(spec)));
  const experiment::RunToIdle run = [&engine]() -> core::Status {
    engine.run_until(core::kNever);
    return {};
  };
  TESSERA_ASSIGN_OR_RETURN(const experiment::CalibrationReport r,
                           experiment::calibrate(*gpu, run, kernels, options_for(f)));
  return report(r, f);
}

#ifdef TESSERA_HAVE_CUDA
core::Status calibrate_cuda(const CalibrateFlags& f,
                            std::span<const experiment::CalibrationKernel> kernels) {
  TESSERA_ASSIGN_OR_RETURN(const std::unique_ptr<cuda::DriverLibrary> driver,
                           cuda::DriverLibrary::open());
  // NVML only reports the clock here; without it the measured clock shows as the driver's.
  auto nvml = cuda::NvmlLibrary::open();
  device::WallClockExecutor executor;
  cuda::CudaGpuOptions options;
  options.gpu_spec = f.gpu;
  options.nvml = nvml ? nvml->get() : nullptr;
  TESSERA_ASSIGN_OR_RETURN(const std::unique_ptr<cuda::CudaGpu> gpu,
                           cuda::CudaGpu::create(*driver, executor, options));
  cuda::CudaGpu& device = *gpu;
  const experiment::RunToIdle run = [&device, &executor]() -> core::Status {
    return device.run_until(executor.now() + kLaunchDeadline, /*stop_when_idle=*/true);
  };
  TESSERA_ASSIGN_OR_RETURN(const experiment::CalibrationReport r,
                           experiment::calibrate(device, run, kernels, options_for(f)));
  return report(r, f);
}
#endif

}  // namespace

void add_calibrate_options(CLI::App& command, CalibrateFlags& f) {
  command
      .add_option("--backend", f.backend,
                  "cuda (a real GPU through the driver) or sim (a simulated GPU: checks the "
                  "procedure)")
      ->capture_default_str();
  command.add_option("--gpu", f.gpu,
                     "Catalog GPU to simulate, e.g. H100-SXM5-80GB (default: the driver's "
                     "GPU; sim: H100-SXM5-80GB)");
  command.add_option("--model", f.model, "Catalog model whose kernels are timed")
      ->capture_default_str();
  command.add_option("--repeat", f.repeat, "Timed launches per kernel (the median is kept)")
      ->capture_default_str();
  command.add_option("--json", f.json_path,
                     "Write the results as JSON to this file ('-' for stdout)");
}

Outcome run_calibrate_command(const CalibrateFlags& f) {
  const auto fail = [](core::Error e, int code) { return Outcome::failure(std::move(e), code); };
  if (f.backend != "cuda" && f.backend != "sim") {
    return fail(core::Error(core::Domain::kConfig, core::Code::kInvalidArgument,
                            fmt::format("--backend {}: expected cuda or sim", f.backend)),
                1);
  }
  experiment::CalibrationSetOptions set;
  set.model = f.model;
  auto kernels = experiment::calibration_kernels(set);
  if (!kernels) return fail(kernels.error(), 1);

  core::Status done;
  if (f.backend == "sim") {
    done = calibrate_sim(f, *kernels);
  } else {
    const cuda::DriverProbe probe = cuda::probe_driver();
    if (!probe.available) {
      return fail(core::Error(core::Domain::kCuda, core::Code::kUnsupported,
                              fmt::format("--backend cuda: no real GPU here: {} (--backend sim "
                                          "checks the procedure on the simulated GPU)",
                                          probe.reason)),
                  kCalibrateNoGpu);
    }
#ifdef TESSERA_HAVE_CUDA
    done = calibrate_cuda(f, *kernels);
#endif
  }
  return done;
}

}  // namespace tessera::cli
