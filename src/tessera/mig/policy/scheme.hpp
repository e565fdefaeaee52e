#pragma once
// How the MIG level orders and places its queue of jobs. The names, summaries and parsing are in
// mig/registry.hpp, the one list of them.

#include <cstdint>

namespace tessera::mig {

enum class Scheme : std::uint8_t {
  kA,           // sort by predicted memory, run in uniform slices (MIGM scheme A)
  kB,           // first come first served, reconfigure on demand (MIGM scheme B)
  kSequential,  // one job at a time on the largest instance (the paper's baseline)
  kStatic,      // a fixed layout, never reconfigured (the static-partition baseline)
  kTimeFit,     // slices by predicted completion time, layout by the queue's (tessera's own)
};

}  // namespace tessera::mig
