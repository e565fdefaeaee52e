#pragma once
// `--backend sim|cuda|auto`, shared by the commands that can run on a real GPU. auto takes the
// real GPU when the driver loads and reports a device, and otherwise says why on stderr and uses
// the simulated one; cuda insists, and its error names the reason and suggests --backend sim.

#include <memory>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::cuda {
class DriverLibrary;
}

namespace tessera::cli {

inline constexpr std::string_view kBackendHelp =
    "sim (the simulated GPU), cuda (a real NVIDIA GPU through the driver) or auto (cuda where "
    "a GPU is found, else sim)";

// The backend a command runs on, with the driver kept open when it is the real one.
class Backend {
 public:
  // Resolves `choice` (sim, cuda or auto): kInvalidArgument for anything else, kUnsupported for
  // cuda without a usable driver. auto prints its fallback line to stderr unless `quiet`.
  static core::Result<Backend> choose(std::string_view choice, bool quiet);

  bool real() const { return driver_ != nullptr; }
  // The driver (real() only).
  const cuda::DriverLibrary& driver() const { return *driver_; }
  // Makes each scenario mode's backend on the chosen GPU: real ones through the driver, or the
  // simulated one under the scenario's model assumptions. The factory keeps the driver open.
  scenario::MakeRunBackend run_backends() const;

 private:
  Backend() = default;
  // shared_ptr: its deleter is bound where the driver is opened, so this header (and builds
  // without the toolkit, where DriverLibrary is never defined) need not see the class.
  std::shared_ptr<const cuda::DriverLibrary> driver_;
};

}  // namespace tessera::cli
