#include "tessera/cli/backend_choice.hpp"

#include <fmt/core.h>

#include "tessera/backends/cuda/backend_status.hpp"
#include "tessera/backends/sim/gpu/sim_run_backend.hpp"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda/cuda_run_backend.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#endif

namespace tessera::cli {

core::Result<Backend> Backend::choose(std::string_view choice, bool quiet) {
  if (choice != "sim" && choice != "cuda" && choice != "auto") {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--backend {}: expected {}", choice, kBackendHelp);
  }
  Backend backend;
  if (choice == "sim") return backend;
  const cuda::DriverProbe probe = cuda::probe_driver();
  if (!probe.available) {
    if (choice == "cuda") {
      return core::failf(core::Domain::kCuda, core::Code::kUnsupported,
                         "--backend cuda: no real GPU backend here: {} (use --backend sim for "
                         "the simulated GPU)",
                         probe.reason);
    }
    if (!quiet)
      fmt::print(stderr, "no real GPU backend here, so using the simulated GPU: {}\n",
                 probe.reason);
    return backend;
  }
#ifdef TESSERA_HAVE_CUDA
  auto driver = cuda::DriverLibrary::open();
  if (!driver) return std::unexpected(driver.error());
  backend.driver_ = std::shared_ptr<const cuda::DriverLibrary>(std::move(*driver));
#endif
  return backend;
}

scenario::MakeRunBackend Backend::run_backends() const {
#ifdef TESSERA_HAVE_CUDA
  if (real()) {
    return [driver = driver_](
               const scenario::Scenario&) -> core::Result<std::unique_ptr<device::RunBackend>> {
      return cuda::make_cuda_run_backend(*driver);
    };
  }
#endif
  return [](const scenario::Scenario& s) -> core::Result<std::unique_ptr<device::RunBackend>> {
    return sim::make_sim_run_backend(s.sim_overrides);
  };
}

}  // namespace tessera::cli
