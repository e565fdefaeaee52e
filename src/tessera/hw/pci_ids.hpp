#pragma once
// NVIDIA GPU model names by PCI device id, for topology sources that give a GPU's PCI ids but not
// its name (NCCL topology XML; hwloc exports without the GPU's CUDA or NVML OS device).

#include <optional>
#include <string_view>

namespace tessera::hw {

inline constexpr unsigned kNvidiaPciVendor = 0x10de;  // PCI SIG vendor id

// The model of NVIDIA device `device_id` as the PCI ID Repository names it, prefixed "NVIDIA "
// ("NVIDIA A100 PCIe 80GB" for 0x20b5); datacenter and workstation GPUs only. nullopt for an id
// not in the table.
std::optional<std::string_view> nvidia_gpu_model(unsigned device_id);

}  // namespace tessera::hw
