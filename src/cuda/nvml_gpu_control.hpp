#pragma once
// Clocks, energy, power and utilisation of one GPU through NVML: the mechanism under LithOS's DVFS
// governor (gpu/dvfs_governor.hpp) and the energy figures of real runs. Locked graphics clocks
// (nvmlDeviceSetGpuLockedClocks; application clocks are deprecated in 13.0) need root or admin
// rights: without them set_locked_clock_mhz fails with kFailedPrecondition and a message that says
// so and how to grant it, and can_lock_clocks() is false. Energy is the total-energy counter
// (millijoules since the driver loaded), read as differences. Built everywhere: NVML is loaded at
// run time (nvml_library.hpp), so no CUDA toolkit is needed.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/cuda/nvml_library.hpp"

namespace tessera::cuda {

struct PowerSample {
  double power_watts = 0;             // nvmlDeviceGetPowerUsage (a 1 s average on Ampere+ but
                                      // GA100, instantaneous on GA100)
  std::optional<double> energy_joules;  // total-energy counter, where the driver has it
  std::optional<int> gpu_utilization_percent;  // not on MIG-enabled GPUs
  std::optional<int> memory_utilization_percent;
  double sm_clock_mhz = 0;  // nvmlDeviceGetClock(SM, current)
};

class NvmlGpuControl {
 public:
  // Device `index` of `nvml` (which must outlive this). Reads the supported graphics clocks and
  // whether clocks can be locked (a harmless probe: lock to the current range and reset).
  static core::Result<std::unique_ptr<NvmlGpuControl>> open(const NvmlLibrary& nvml,
                                                            unsigned index);
  // Resets locked clocks if this object locked them (a crashed run leaves them locked until
  // reboot or nvidia-smi -rgc; the destructor does not leave them so).
  ~NvmlGpuControl();

  // Supported graphics clocks at the current memory clock, highest first.
  const std::vector<int>& supported_clocks_mhz() const;
  bool can_lock_clocks() const;
  // Locks the graphics clock to the supported clock nearest `mhz` (min = max = that clock) and
  // returns it.
  core::Result<int> set_locked_clock_mhz(double mhz);
  core::Status reset_clocks();
  core::Result<PowerSample> sample() const;

 private:
  struct State;
  explicit NvmlGpuControl(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tessera::cuda
