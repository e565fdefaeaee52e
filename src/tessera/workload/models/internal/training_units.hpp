#pragma once
// Assembling a training iteration from stretches of a network ("units"): the forward kernels of
// every unit in order, then the backward kernels of every unit in reverse order (within a unit,
// the ops' backward kernels also run in reverse), then one optimizer step over all parameters.
// A unit may repeat (identical layers), which keeps deep networks at a few descriptors.

#include <vector>

#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

struct TrainingUnit {
  std::vector<Kernel> forward;
  // Backward kernels of each forward op, in forward-op order (they run reversed).
  std::vector<std::vector<Kernel>> backward_by_op;
  int repeat = 1;
  double parameters = 0;  // of one repetition
};

struct TrainingIteration {
  KernelSequence sequence;
  double parameters = 0;
};

TrainingIteration assemble_iteration(const std::vector<TrainingUnit>& units,
                                     Kernel (*optimizer_step)(double parameters));

}  // namespace tessera::workload
