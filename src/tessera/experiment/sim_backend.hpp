#pragma once
// The backend experiments run on unless their caller names another: the simulated GPU, under each
// scenario's `sim:` model assumptions.

#include "tessera/scenario/runner.hpp"

namespace tessera::experiment {

scenario::MakeRunBackend sim_backends();

}  // namespace tessera::experiment
