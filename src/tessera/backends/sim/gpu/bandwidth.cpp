#include "tessera/backends/sim/gpu/bandwidth.hpp"

#include <cstddef>

namespace tessera::sim {

namespace {

constexpr double kFitSlack = 1e-12;
constexpr double kUnsettled = -1;

// The last user still open gets what is left, or all it asks for.
double rest(double demand, double left) {
  return demand <= left ? 1 : left / demand;
}

void fill_two(double d0, double d1, double capacity, double& s0, double& s1) {
  if (d0 + d1 <= capacity * (1 + kFitSlack)) {
    s0 = s1 = 1;
    return;
  }
  if (!(d0 > 0) || !(d1 > 0)) {
    // One asks for nothing and is served; the other is alone with the whole capacity.
    s0 = d0 > 0 ? rest(d0, capacity) : 1;
    s1 = d1 > 0 ? rest(d1, capacity) : 1;
    return;
  }
  const double level = capacity / 2;
  if (d0 <= level) {
    s0 = 1;
    s1 = rest(d1, capacity - d0);
  } else if (d1 <= level) {
    s1 = 1;
    s0 = rest(d0, capacity - d1);
  } else {
    s0 = level / d0;
    s1 = level / d1;
  }
}

}  // namespace

void water_fill(std::span<const double> demand, double capacity, std::span<double> share) {
  // One and two users, the common cases: the loop below's steps, written out.
  if (demand.size() == 1) {
    share[0] = demand[0] <= capacity * (1 + kFitSlack) ? 1 : capacity / demand[0];
    return;
  }
  if (demand.size() == 2) {
    fill_two(demand[0], demand[1], capacity, share[0], share[1]);
    return;
  }
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
