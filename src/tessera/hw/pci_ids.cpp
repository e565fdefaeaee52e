#include "tessera/hw/pci_ids.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace tessera::hw {
namespace {

// Vendor 10de's device lines of the PCI ID Repository (https://pci-ids.ucw.cz, file pci.ids;
// pciutils/pciids commit 006181e2c5d5b9a3b57d252aa5b3d827971d41a9), the marketing name in its
// brackets with "NVIDIA " before it. Sorted by id.
constexpr std::array<std::pair<unsigned, std::string_view>, 45> kModels{{
    {0x1db1, "NVIDIA Tesla V100 SXM2 16GB"},
    {0x1db2, "NVIDIA Tesla V100 DGXS 16GB"},
    {0x1db3, "NVIDIA Tesla V100 FHHL 16GB"},
    {0x1db4, "NVIDIA Tesla V100 PCIe 16GB"},
    {0x1db5, "NVIDIA Tesla V100 SXM2 32GB"},
    {0x1db6, "NVIDIA Tesla V100 PCIe 32GB"},
    {0x1db7, "NVIDIA Tesla V100 DGXS 32GB"},
    {0x1db8, "NVIDIA Tesla V100 SXM3 32GB"},
    {0x1df5, "NVIDIA Tesla V100 SXM2 16GB"},
    {0x1df6, "NVIDIA Tesla V100S PCIe 32GB"},
    {0x20b0, "NVIDIA A100 SXM4 40GB"},
    {0x20b1, "NVIDIA A100 PCIe 40GB"},
    {0x20b2, "NVIDIA A100 SXM4 80GB"},
    {0x20b3, "NVIDIA A100-SXM-64GB"},
    {0x20b5, "NVIDIA A100 PCIe 80GB"},
    {0x20b7, "NVIDIA A30 PCIe"},
    {0x20bd, "NVIDIA A800 SXM4 40GB"},
    {0x20f1, "NVIDIA A100 PCIe 40GB"},
    {0x20f3, "NVIDIA A800-SXM4-80GB"},
    {0x20f5, "NVIDIA A800 80GB PCIe"},
    {0x20f6, "NVIDIA A800 40GB PCIe"},
    {0x2230, "NVIDIA RTX A6000"},
    {0x2235, "NVIDIA A40"},
    {0x2236, "NVIDIA A10"},
    {0x2237, "NVIDIA A10G"},
    // 0x2321 is what NVIDIA's driver README lists as "NVIDIA H100 NVL".
    {0x2321, "NVIDIA H100L 94GB"},
    {0x2322, "NVIDIA H800 PCIe"},
    {0x2324, "NVIDIA H800"},
    {0x2329, "NVIDIA H20"},
    {0x232c, "NVIDIA H20 HBM3e"},
    {0x2330, "NVIDIA H100 SXM5 80GB"},
    {0x2331, "NVIDIA H100 PCIe"},
    {0x2335, "NVIDIA H200 SXM 141GB"},
    {0x2336, "NVIDIA H100"},
    {0x2337, "NVIDIA H100 SXM5 64GB"},
    {0x2338, "NVIDIA H100 SXM5 96GB"},
    {0x2339, "NVIDIA H100 SXM5 94GB"},
    {0x233b, "NVIDIA H200 NVL"},
    {0x2684, "NVIDIA GeForce RTX 4090"},
    {0x26b1, "NVIDIA RTX 6000 Ada Generation"},
    {0x26b5, "NVIDIA L40"},
    {0x26b9, "NVIDIA L40S"},
    {0x27b8, "NVIDIA L4"},
    {0x2901, "NVIDIA B200"},
    {0x2bb5, "NVIDIA RTX PRO 6000 Blackwell Server Edition"},
}};

static_assert(std::ranges::is_sorted(kModels, {}, &std::pair<unsigned, std::string_view>::first));

}  // namespace

std::optional<std::string_view> nvidia_gpu_model(unsigned device_id) {
  const auto it = std::ranges::lower_bound(kModels, device_id, {},
                                           &std::pair<unsigned, std::string_view>::first);
  if (it == kModels.end() || it->first != device_id) return std::nullopt;
  return it->second;
}

}  // namespace tessera::hw
