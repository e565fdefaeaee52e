#pragma once
// The real driver and its first GPU for the CUDA benchmarks, opened once per program. Where there
// is none, `why` says so and every benchmark skips with it (scripts/device-check.sh runs them on a
// GPU).

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "tessera/backends/cuda/driver_library.hpp"

namespace tessera::bench {

struct BenchGpu {
  std::unique_ptr<cuda::DriverLibrary> driver;  // null where there is no GPU
  cuda::DriverDevice device;
  std::string why;
};

inline const BenchGpu& bench_gpu() {
  static const BenchGpu g = [] {
    BenchGpu out;
    auto driver = cuda::DriverLibrary::open();
    if (!driver) {
      out.why = driver.error().message();
      return out;
    }
    auto dev = (*driver)->device(0);
    if (!dev) {
      out.why = dev.error().message();
      return out;
    }
    out.device = *dev;
    out.driver = std::move(*driver);
    return out;
  }();
  return g;
}

// True (after SkipWithError naming the reason) where there is no GPU.
inline bool skip_without_gpu(benchmark::State& state) {
  if (bench_gpu().driver != nullptr) return false;
  state.SkipWithError(("needs a GPU: " + bench_gpu().why).c_str());
  return true;
}

}  // namespace tessera::bench
