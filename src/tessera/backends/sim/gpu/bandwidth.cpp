#include "tessera/backends/sim/gpu/bandwidth.hpp"

#include <cstddef>

namespace tessera::sim {

namespace {

constexpr double kFitSlack = 1e-12;
constexpr double kUnsettled = -1;

}  // namespace

void water_fill(std::span<const double> demand, double capacity, std::span<double> share) {
  double total = 0;
  for (double d : demand) total += d;
  if (total <= capacity * (1 + kFitSlack)) {
    for (double& s : share) s = 1;
    return;
  }
  // Raise the water level: everyone who asks for no more than an even split of what is left is
  // served in full; repeat until the rest all want more than the level, then they get the level.
  double left = capacity;
  std::size_t open = 0;
  for (std::size_t i = 0; i < demand.size(); ++i) {
    if (demand[i] > 0) {
      share[i] = kUnsettled;
      ++open;
    } else {
      share[i] = 1;
    }
  }
  while (open > 0) {
    const double level = left / static_cast<double>(open);
    bool served = false;
    for (std::size_t i = 0; i < demand.size(); ++i) {
      if (share[i] == kUnsettled && demand[i] <= level) {
        share[i] = 1;
        left -= demand[i];
        --open;
        served = true;
      }
    }
    if (!served) {
      for (std::size_t i = 0; i < demand.size(); ++i) {
        if (share[i] == kUnsettled) share[i] = level / demand[i];
      }
      return;
    }
  }
}

}  // namespace tessera::sim
