#pragma once
// Where tessera stands with the real GPU, asked without needing the CUDA toolkit's headers: the
// one place the CLI learns whether the real backend can run here, and why not. Built everywhere;
// in a build without the toolkit it says so.

#include <string>

namespace tessera::cuda {

// True when this build has the real-GPU backend (the CUDA toolkit was found at build time).
bool built_with_cuda();

struct DriverProbe {
  bool available = false;  // the driver loaded, initialised and has at least one device
  // When !available: one line a user can act on (no toolkit at build time, no libcuda.so.1, cuInit
  // failed and why, no device).
  std::string reason;
  int driver_version = 0;  // cuDriverGetVersion: 13000 = CUDA 13.0
  int devices = 0;
};

// Loads the driver (DriverLibrary::default_path() unless `path` is given), initialises it and
// counts devices. Never fails and never aborts: the result says why there is no real backend.
DriverProbe probe_driver(const std::string& path = {});

}  // namespace tessera::cuda
