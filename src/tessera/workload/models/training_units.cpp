#include "tessera/workload/models/internal/training_units.hpp"

namespace tessera::workload {

TrainingIteration assemble_iteration(const std::vector<TrainingUnit>& units,
                                     Kernel (*optimizer_step)(double parameters)) {
  TrainingIteration out;
  for (const TrainingUnit& u : units) {
    out.sequence.groups.push_back({.kernels = u.forward, .repeat = u.repeat});
    out.parameters += u.parameters * u.repeat;
  }
  for (auto u = units.rbegin(); u != units.rend(); ++u) {
    KernelGroup g{.kernels = {}, .repeat = u->repeat};
    for (auto op = u->backward_by_op.rbegin(); op != u->backward_by_op.rend(); ++op) {
      g.kernels.insert(g.kernels.end(), op->begin(), op->end());
    }
    out.sequence.groups.push_back(std::move(g));
  }
  out.sequence.groups.push_back({.kernels = {optimizer_step(out.parameters)}, .repeat = 1});
  return out;
}

}  // namespace tessera::workload
