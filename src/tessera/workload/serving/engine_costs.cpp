#include "tessera/workload/serving/engine_costs.hpp"

#include <fmt/format.h>

#include "tessera/core/try.hpp"

namespace tessera::workload {

EngineCosts default_engine_costs() {
  // `tessera validate --fit`, group "serving engine", on the A100-SXM4-80GB rows of
  // splitwise_sim/perf_model.csv the split assigns to fitting.
  return EngineCosts{
      .step = 4'500'650, .prefill = 11'243'733, .per_worker = 1'271'078, .per_sequence = 323'029};
}

core::Status validate(const EngineCosts& costs) {
  const auto check = [](std::string_view name, core::Nanos v) -> core::Status {
    if (v < 0 || v > core::seconds(1)) {
      return core::failf(core::Domain::kWorkload, core::Code::kInvalidArgument,
                         "engine cost {} ({} ns) must be in [0, 1 s]", name, v);
    }
    return {};
  };
  TESSERA_TRY(check("step", costs.step));
  TESSERA_TRY(check("prefill", costs.prefill));
  TESSERA_TRY(check("per_worker", costs.per_worker));
  TESSERA_TRY(check("per_sequence", costs.per_sequence));
  return {};
}

}  // namespace tessera::workload
