#include "tessera/backends/sim/gpu/sim_run_backend.hpp"

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {

namespace {

class SimRunBackend final : public device::RunBackend {
 public:
  explicit SimRunBackend(const SimGpuOverrides& overrides) : overrides_(overrides) {}
  std::string_view name() const override { return "simulator"; }
  device::Executor& executor() override { return engine_; }
  core::Result<std::unique_ptr<device::GpuDevice>> make_gpu(const hw::GpuSpec& spec, int) override {
    // Each GPU with its own board's calibration, under the scenario's overrides.
    auto gpu = SimGpu::create(engine_, spec, options_for(spec, overrides_));
    if (!gpu) return std::unexpected(gpu.error());
    return std::unique_ptr<device::GpuDevice>(std::move(*gpu));
  }
  core::Status run_until(core::Nanos until) override {
    engine_.run_until(until);
    return {};
  }

 private:
  SimGpuOverrides overrides_;
  Engine engine_;
};

}  // namespace

std::unique_ptr<device::RunBackend> make_sim_run_backend(const SimGpuOverrides& overrides) {
  return std::make_unique<SimRunBackend>(overrides);
}

}  // namespace tessera::sim
