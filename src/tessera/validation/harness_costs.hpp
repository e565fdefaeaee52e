#pragma once
// What a benchmark adds to the kernels it times: a measurement of one library call taken around
// the call on the host (Measurement::host_timed_call) holds the library's host work before its
// first kernel starts, which a profiler's kernel time does not. It belongs to the measurement,
// not to the GPU: no scenario pays it, and `tessera validate` adds it only to those rows.

#include <string_view>

#include "tessera/core/time.hpp"

namespace tessera::validation {

struct HarnessCosts {
  core::Nanos host_call = 0;  // per call timed from the host
};

inline constexpr HarnessCosts kNoHarnessCosts{};

// The costs fitted for a board's benchmarks by `tessera validate --fit` (the group "attention"),
// or none for a board without rows timed from the host.
HarnessCosts default_harness_costs(std::string_view gpu);

}  // namespace tessera::validation
