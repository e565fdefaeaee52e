#include "tessera/dra/mig_partitions.hpp"

#include <fmt/format.h>

#include <sstream>

#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/backends/nvml/nvml_mig_device.hpp"
#include "tessera/core/try.hpp"

namespace tessera::dra {

NvmlMigPartitions::NvmlMigPartitions(std::shared_ptr<cuda::NvmlLibrary> library)
    : library_(std::move(library)) {}

NvmlMigPartitions::~NvmlMigPartitions() = default;

core::Result<cuda::NvmlMigDevice*> NvmlMigPartitions::open(int gpu) {
  if (auto it = devices_.find(gpu); it != devices_.end()) return it->second.get();
  TESSERA_ASSIGN_OR_RETURN(auto device,
                           cuda::NvmlMigDevice::open(library_, static_cast<unsigned>(gpu)));
  return (devices_[gpu] = std::move(device)).get();
}

std::vector<hw::MigProfile> NvmlMigPartitions::profiles(int gpu) {
  std::lock_guard lock(mu_);
  // Asked again each time, so a GPU taken out of MIG mode is published whole at the next refresh.
  const cuda::NvmlApi& api = library_->api();
  cuda::nvml::Device handle = nullptr;
  unsigned mode = 0;
  unsigned pending = 0;
  if (api.device_get_handle_by_index(static_cast<unsigned>(gpu), &handle) != cuda::nvml::kSuccess ||
      api.device_get_mig_mode(handle, &mode, &pending) != cuda::nvml::kSuccess ||
      mode != cuda::nvml::kDeviceMigEnable) {
    devices_.erase(gpu);
    return {};
  }
  auto device = open(gpu);
  return device ? (*device)->geometry().profiles : std::vector<hw::MigProfile>{};
}

core::Result<device::MigInstance> NvmlMigPartitions::create(int gpu, int profile_id, int start) {
  std::lock_guard lock(mu_);
  TESSERA_ASSIGN_OR_RETURN(cuda::NvmlMigDevice * device, open(gpu));
  return device->create_instance(profile_id, start);
}

core::Status NvmlMigPartitions::destroy(int gpu, device::MigInstanceId instance) {
  std::lock_guard lock(mu_);
  TESSERA_ASSIGN_OR_RETURN(cuda::NvmlMigDevice * device, open(gpu));
  for (const auto& i : device->instances()) {
    if (i.id == instance) return device->destroy_instance(instance);
  }
  return {};
}

core::Result<std::vector<std::string>> mig_cap_nodes(std::string_view minors, int gpu, int gi,
                                                     int ci) {
  const std::string gi_entry = fmt::format("gpu{}/gi{}/access", gpu, gi);
  const std::string ci_entry = fmt::format("gpu{}/gi{}/ci{}/access", gpu, gi, ci);
  std::vector<std::string> out(2);
  std::istringstream lines{std::string(minors)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string entry;
    int minor = -1;
    if (!(fields >> entry >> minor) || minor < 0) continue;
    const std::string node = fmt::format("/dev/nvidia-caps/nvidia-cap{}", minor);
    if (entry == gi_entry) out[0] = node;
    if (entry == ci_entry) out[1] = node;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty()) {
      return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                         "/proc/driver/nvidia-caps/mig-minors has no entry '{}'",
                         i == 0 ? gi_entry : ci_entry);
    }
  }
  return out;
}

}  // namespace tessera::dra
