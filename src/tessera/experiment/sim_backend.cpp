#include "tessera/experiment/sim_backend.hpp"

#include "tessera/backends/sim/gpu/sim_run_backend.hpp"

namespace tessera::experiment {

scenario::MakeRunBackend sim_backends() {
  return [](const scenario::Scenario& s) -> core::Result<std::unique_ptr<device::RunBackend>> {
    return sim::make_sim_run_backend(s.sim_overrides);
  };
}

}  // namespace tessera::experiment
