// The PCI device id table against the PCI ID Repository's names, and its names against the GPU
// catalog's device-name lookup.
#include "tessera/hw/pci_ids.hpp"

#include <gtest/gtest.h>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::hw {
namespace {

TEST(PciIds, DatacenterAndWorkstationGpus) {
  // Each pair: pci.ids' device line under vendor 10de, and the model given for it.
  const std::vector<std::pair<unsigned, std::string_view>> expected = {
      {0x20b0, "NVIDIA A100 SXM4 40GB"},
      {0x20b2, "NVIDIA A100 SXM4 80GB"},
      {0x20f1, "NVIDIA A100 PCIe 40GB"},
      {0x20b5, "NVIDIA A100 PCIe 80GB"},
      {0x2330, "NVIDIA H100 SXM5 80GB"},
      {0x2331, "NVIDIA H100 PCIe"},
      {0x2321, "NVIDIA H100L 94GB"},
      {0x2335, "NVIDIA H200 SXM 141GB"},
      {0x233b, "NVIDIA H200 NVL"},
      {0x2329, "NVIDIA H20"},
      {0x26b9, "NVIDIA L40S"},
      {0x26b5, "NVIDIA L40"},
      {0x27b8, "NVIDIA L4"},
      {0x2236, "NVIDIA A10"},
      {0x20b7, "NVIDIA A30 PCIe"},
      {0x2235, "NVIDIA A40"},
      {0x1db1, "NVIDIA Tesla V100 SXM2 16GB"},
      {0x1db5, "NVIDIA Tesla V100 SXM2 32GB"},
      {0x1db4, "NVIDIA Tesla V100 PCIe 16GB"},
      {0x1db6, "NVIDIA Tesla V100 PCIe 32GB"},
      {0x1db8, "NVIDIA Tesla V100 SXM3 32GB"},
      {0x1df6, "NVIDIA Tesla V100S PCIe 32GB"},
      {0x2684, "NVIDIA GeForce RTX 4090"},
      {0x26b1, "NVIDIA RTX 6000 Ada Generation"},
  };
  for (const auto& [id, model] : expected) {
    EXPECT_EQ(nvidia_gpu_model(id), model) << std::hex << id;
  }
}

TEST(PciIds, UnknownIdsHaveNoModel) {
  EXPECT_EQ(nvidia_gpu_model(0x0000), std::nullopt);
  EXPECT_EQ(nvidia_gpu_model(0x22a3), std::nullopt);  // the H100 NVSwitch, not a GPU
  EXPECT_EQ(nvidia_gpu_model(0xffff), std::nullopt);
}

// The names read as a driver's device names do, so the catalog finds the GPUs it models.
TEST(PciIds, CatalogGpusAreFoundByTheirPciModelNames) {
  EXPECT_EQ(gpu_for_device_name(*nvidia_gpu_model(0x20b0)), "A100-SXM4-40GB");
  EXPECT_EQ(gpu_for_device_name(*nvidia_gpu_model(0x20b2)), "A100-SXM4-80GB");
  EXPECT_EQ(gpu_for_device_name(*nvidia_gpu_model(0x2330)), "H100-SXM5-80GB");
  EXPECT_EQ(gpu_for_device_name(*nvidia_gpu_model(0x2335)), "H200-SXM-141GB");
  EXPECT_EQ(gpu_for_device_name(*nvidia_gpu_model(0x2684)), "RTX-4090-24GB");
  EXPECT_EQ(gpu_for_device_name(*nvidia_gpu_model(0x26b9)), std::nullopt);  // no L40S entry
}

}  // namespace
}  // namespace tessera::hw
