#pragma once
// Run options that play a scenario on the simulated GPU under its `sim:` assumptions, as
// `tessera simulate` does.

#include <memory>

#include "tessera/backends/sim/gpu/sim_run_backend.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::test {

inline scenario::RunOptions sim_run_options() {
  scenario::RunOptions options;
  options.backend = [](const scenario::Scenario& run) {
    return core::Result<std::unique_ptr<device::RunBackend>>(
        sim::make_sim_run_backend(run.sim_overrides));
  };
  return options;
}

}  // namespace tessera::test
