#include "tessera/backends/cuda/cuda_run_backend.hpp"

#include <vector>

#include "tessera/backends/cuda/cuda_gpu.hpp"
#include "tessera/core/try.hpp"
#include "tessera/device/poll_loop.hpp"
#include "tessera/device/wall_clock_executor.hpp"

namespace tessera::cuda {

namespace {

class CudaRunBackend final : public device::RunBackend {
 public:
  explicit CudaRunBackend(const DriverLibrary& driver) : driver_(driver) {}
  std::string_view name() const override { return "cuda"; }
  device::Executor& executor() override { return executor_; }
  core::Result<std::unique_ptr<device::GpuDevice>> make_gpu(const hw::GpuSpec& spec,
                                                            int index) override {
    CudaGpuOptions options;
    options.device_ordinal = index;
    options.gpu_spec = spec.name;
    auto gpu = CudaGpu::create(driver_, executor_, options);
    if (!gpu) {
      return std::unexpected(
          gpu.error().with_context(fmt::format("real GPU {} (exclusive mode needs one GPU per "
                                               "tenant)",
                                               index)));
    }
    gpus_.push_back(gpu->get());
    return std::unique_ptr<device::GpuDevice>(std::move(*gpu));
  }
  // Timers and every GPU's completions interleave on this thread, as in CudaGpu::run_until.
  core::Status run_until(core::Nanos until) override {
    return device::poll_until(executor_, until, kPollInterval, [this]() -> core::Status {
      for (auto* gpu : gpus_) TESSERA_TRY(gpu->poll());
      return {};
    });
  }

 private:
  const DriverLibrary& driver_;
  device::WallClockExecutor executor_;
  std::vector<CudaGpu*> gpus_;
};

}  // namespace

std::unique_ptr<device::RunBackend> make_cuda_run_backend(const DriverLibrary& driver) {
  return std::make_unique<CudaRunBackend>(driver);
}

}  // namespace tessera::cuda
