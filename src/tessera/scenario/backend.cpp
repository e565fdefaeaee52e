#include "tessera/scenario/backend.hpp"

#include <chrono>
#include <thread>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda/cuda_gpu.hpp"
#include "tessera/device/wall_clock_executor.hpp"
#endif

namespace tessera::scenario {

namespace {

class SimBackend final : public RunBackend {
 public:
  std::string_view name() const override { return "simulator"; }
  device::Executor& executor() override { return engine_; }
  core::Result<std::unique_ptr<device::GpuDevice>> make_gpu(const Scenario& s, int) override {
    auto gpu = sim::SimGpu::create(engine_, s.gpu, s.sim_options);
    if (!gpu) return std::unexpected(gpu.error());
    return std::unique_ptr<device::GpuDevice>(std::move(*gpu));
  }
  core::Status run_until(core::Nanos until) override {
    engine_.run_until(until);
    return {};
  }

 private:
  sim::Engine engine_;
};

#ifdef TESSERA_HAVE_CUDA
class CudaBackend final : public RunBackend {
 public:
  explicit CudaBackend(const cuda::DriverLibrary& driver) : driver_(driver) {}
  std::string_view name() const override { return "cuda"; }
  device::Executor& executor() override { return executor_; }
  core::Result<std::unique_ptr<device::GpuDevice>> make_gpu(const Scenario& s, int index) override {
    cuda::CudaGpuOptions options;
    options.device_ordinal = index;
    options.gpu_spec = s.gpu.name;
    auto gpu = cuda::CudaGpu::create(driver_, executor_, options);
    if (!gpu) {
      return std::unexpected(
          gpu.error().with_context(fmt::format("real GPU {} (exclusive mode needs one GPU per "
                                               "tenant)",
                                               index)));
    }
    gpus_.push_back(gpu->get());
    return std::unique_ptr<device::GpuDevice>(std::move(*gpu));
  }
  // Timers and completions interleave on this thread; between them it sleeps briefly.
  // ASSUMPTION: 20 us, as CudaGpu::run_until: below the shortest kernels worth scheduling.
  core::Status run_until(core::Nanos until) override {
    while (executor_.now() < until) {
      executor_.run_due();
      for (auto* gpu : gpus_) TESSERA_TRY(gpu->poll());
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return {};
  }

 private:
  const cuda::DriverLibrary& driver_;
  device::WallClockExecutor executor_;
  std::vector<cuda::CudaGpu*> gpus_;
};
#endif

}  // namespace

std::unique_ptr<RunBackend> make_sim_backend() {
  return std::make_unique<SimBackend>();
}

core::Result<std::unique_ptr<RunBackend>> make_cuda_backend(const cuda::DriverLibrary& driver) {
#ifdef TESSERA_HAVE_CUDA
  return std::unique_ptr<RunBackend>(std::make_unique<CudaBackend>(driver));
#else
  (void)driver;
  return core::fail(core::Domain::kScenario, core::Code::kUnsupported,
                    "this tessera was built without the CUDA toolkit: only the simulated GPU "
                    "is available");
#endif
}

}  // namespace tessera::scenario
