#pragma once
// Sharing one bandwidth domain among the kernels running in it: max-min fairness (water-filling).
// Each kernel asks for its demand (the rate it would draw alone). If the demands fit in the
// domain's capacity everyone gets theirs; otherwise the capacity is split so that no kernel gets
// more than it asks and every kernel that is cut gets the same amount. A kernel granted a
// fraction s < 1 of its demand progresses at rate s (its compute stalls on memory alike).

#include <span>

namespace tessera::sim {

// Fills `share[i]` in (0, 1] with the fraction of demand[i] granted. Kernels that demand nothing
// get 1. `capacity` must be > 0 if any demand is. Demands that exceed the capacity by no more than
// a relative 1e-12 count as fitting, so a kernel alone is never slowed by rounding.
void water_fill(std::span<const double> demand, double capacity, std::span<double> share);

}  // namespace tessera::sim
