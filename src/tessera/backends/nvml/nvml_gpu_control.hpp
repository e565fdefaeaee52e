#pragma once
// Clocks, energy, power and utilisation of one GPU through NVML: the mechanism under LithOS's DVFS
// governor (gpu/dvfs_governor.hpp) and the energy figures of real runs. Locked graphics clocks
// (nvmlDeviceSetGpuLockedClocks; application clocks are deprecated in 13.0) need root or admin
// rights: without them set_locked_clock_mhz fails with kFailedPrecondition and a message that says
// so and how to grant it, and can_lock_clocks() is false. Energy is the total-energy counter
// (millijoules since the driver loaded), read as differences. Built everywhere: NVML is loaded at
// run time (nvml_library.hpp), so no CUDA toolkit is needed. Every clock, power and utilisation
// entry point is optional: what the driver lacks is reported, never invented.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {

struct PowerSample {
  double power_watts = 0;               // nvmlDeviceGetPowerUsage (a 1 s average on Ampere+ but
                                        // GA100, instantaneous on GA100)
  std::optional<double> energy_joules;  // total-energy counter, where the driver has it
  std::optional<int> gpu_utilization_percent;  // not on MIG-enabled GPUs
  std::optional<int> memory_utilization_percent;
  double sm_clock_mhz = 0;  // nvmlDeviceGetClock(SM, current)
};

class NvmlGpuControl {
 public:
  // Device `index` of `nvml` (which must outlive this). Reads the supported graphics clocks and
  // whether clocks can be locked: a probe locks the graphics clock to the whole supported range
  // (lowest to highest, which restricts nothing) and resets it at once. Fails only when the
  // device cannot be opened; missing clock support shows in can_lock_clocks() and its reason.
  static core::Result<std::unique_ptr<NvmlGpuControl>> open(const NvmlLibrary& nvml,
                                                            unsigned index);
  // Resets locked clocks if this object locked them (a crashed run leaves them locked until
  // reboot or nvidia-smi -rgc; the destructor does not leave them so).
  ~NvmlGpuControl();
  NvmlGpuControl(const NvmlGpuControl&) = delete;
  NvmlGpuControl& operator=(const NvmlGpuControl&) = delete;

  // Supported graphics clocks at the current memory clock, highest first, no repeats. Empty when
  // the driver does not list them (lock_clocks_status() says why).
  const std::vector<int>& supported_clocks_mhz() const;
  bool can_lock_clocks() const;
  // Ok when clocks can be locked; otherwise the reason: kFailedPrecondition without permission
  // ("locked clocks need root ..."), kUnsupported where the GPU or driver lacks them.
  core::Status lock_clocks_status() const;
  // Locks the graphics clock to the supported clock nearest `mhz` (min = max = that clock) and
  // returns it.
  core::Result<int> set_locked_clock_mhz(double mhz);
  // The clock this object locked, if it holds a lock.
  std::optional<int> locked_clock_mhz() const;
  // Back to the driver's clock management. A no-op success when nothing is locked by this object.
  core::Status reset_clocks();
  // Power and SM clock are required (kUnsupported naming the missing one); energy and
  // utilisation are filled where the driver reports them.
  core::Result<PowerSample> sample() const;

 private:
  struct State;
  explicit NvmlGpuControl(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The supported clock nearest `mhz` in `clocks` (ties: the higher one); nullopt when `clocks` is
// empty. Pure, for the DVFS governor's plans and the tests.
std::optional<int> nearest_clock_mhz(const std::vector<int>& clocks, double mhz);

}  // namespace tessera::cuda
