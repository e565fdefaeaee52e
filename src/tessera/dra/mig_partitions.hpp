#pragma once
// MIG partitions for claims: made when a claim allocated one is prepared, removed when it is
// unprepared, through NVML (or a test's stand-in), and the device nodes a container needs to use
// one. A partition is a GPU instance with one compute instance spanning it, as tessera's MIG
// level makes them (NvmlMigDevice).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/mig_device.hpp"
#include "tessera/hw/mig_profiles.hpp"

namespace tessera::cuda {
class NvmlLibrary;
class NvmlMigDevice;
}  // namespace tessera::cuda

namespace tessera::dra {

class MigPartitions {
 public:
  virtual ~MigPartitions() = default;
  // GPU `gpu`'s MIG profiles when it is in MIG mode now; empty when it is not (or cannot be
  // asked).
  virtual std::vector<hw::MigProfile> profiles(int gpu) = 0;
  // A partition of `profile_id` at memory slice `start` on GPU `gpu`.
  virtual core::Result<device::MigInstance> create(int gpu, int profile_id, int start) = 0;
  // Removes the GPU instance `instance` of GPU `gpu`; one that no longer exists is not an error.
  virtual core::Status destroy(int gpu, device::MigInstanceId instance) = 0;
};

// Through NVML: each GPU opened (cuda::NvmlMigDevice) the first time it is asked for. The
// plugin's slice refresh and the kubelet's calls come from different threads: one at a time.
class NvmlMigPartitions final : public MigPartitions {
 public:
  explicit NvmlMigPartitions(std::shared_ptr<cuda::NvmlLibrary> library);
  ~NvmlMigPartitions() override;
  std::vector<hw::MigProfile> profiles(int gpu) override;
  core::Result<device::MigInstance> create(int gpu, int profile_id, int start) override;
  core::Status destroy(int gpu, device::MigInstanceId instance) override;

 private:
  core::Result<cuda::NvmlMigDevice*> open(int gpu);

  std::mutex mu_;
  std::shared_ptr<cuda::NvmlLibrary> library_;
  std::map<int, std::unique_ptr<cuda::NvmlMigDevice>> devices_;
};

// The capability device nodes that give a process a partition: the GPU instance's and its compute
// instance's "access" entries of /proc/driver/nvidia-caps/mig-minors ("gpu0/gi3/access 30",
// "gpu0/gi3/ci0/access 31"), as /dev/nvidia-caps/nvidia-cap<minor>. `minors` is that file's
// text. An error naming the entry that is missing.
core::Result<std::vector<std::string>> mig_cap_nodes(std::string_view minors, int gpu, int gi,
                                                     int ci);

}  // namespace tessera::dra
