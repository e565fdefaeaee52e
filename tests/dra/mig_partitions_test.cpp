#include "tessera/dra/mig_partitions.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/dra/claim_allocation.hpp"
#include "tessera/dra/resource_slice.hpp"

namespace tessera::dra {
namespace {

TEST(MigPartitions, DeviceNamesReadBack) {
  const std::string name = mig_device_name(2, 9, 4);
  EXPECT_EQ(name, "gpu-2-mig-9-4");
  auto n = parse_mig_device_name(name);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->gpu, 2);
  EXPECT_EQ(n->profile_id, 9);
  EXPECT_EQ(n->start, 4);
  for (const char* bad : {"gpu-2", "gpu-2-mig-9", "gpu-2-mig-9-4x", "gpu-x-mig-9-4", "mig-9-4"}) {
    EXPECT_FALSE(parse_mig_device_name(bad)) << bad;
  }
}

TEST(MigPartitions, CapabilityNodesComeFromTheMinorsFile) {
  const std::string minors =
      "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
      "gpu1/gi1/access 21\ngpu1/gi1/ci0/access 22\n";
  auto nodes = mig_cap_nodes(minors, 1, 1, 0);
  ASSERT_TRUE(nodes) << nodes.error().message();
  EXPECT_EQ(*nodes, (std::vector<std::string>{"/dev/nvidia-caps/nvidia-cap21",
                                              "/dev/nvidia-caps/nvidia-cap22"}));
  auto missing = mig_cap_nodes(minors, 0, 2, 0);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("gpu0/gi2/access"), std::string::npos);
}

// Through the fake NVML (an A100-SXM4-40GB in MIG mode): the GPU's profiles, and a partition
// made and removed.
TEST(MigPartitions, NvmlMakesAndRemovesAPartition) {
  auto library = cuda::NvmlLibrary::open(TESSERA_FAKE_NVML);
  ASSERT_TRUE(library) << library.error().message();
  NvmlMigPartitions partitions(std::move(*library));
  const auto profiles = partitions.profiles(0);
  ASSERT_FALSE(profiles.empty());
  EXPECT_TRUE(partitions.profiles(5).empty()) << "no GPU 5";
  auto made = partitions.create(0, 9, 4);
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE(made->uuid.starts_with("MIG-")) << made->uuid;
  EXPECT_EQ(made->start, 4);
  auto again = partitions.create(0, 9, 4);
  EXPECT_FALSE(again) << "the placement is taken";
  ASSERT_TRUE(partitions.destroy(0, made->id));
  EXPECT_TRUE(partitions.destroy(0, made->id)) << "gone already: not an error";
  EXPECT_TRUE(partitions.create(0, 9, 4));
}

// A GPU out of MIG mode has no partitions to publish (the fake NVML's script turns MIG off).
TEST(MigPartitions, AGpuOutOfMigModeHasNone) {
  const std::string script = ::testing::TempDir() + "no-mig-" + std::to_string(getpid()) + ".json";
  std::ofstream(script) << R"({"mig_mode": 0})";
  setenv("FAKE_NVML_SCRIPT", script.c_str(), 1);
  auto library = cuda::NvmlLibrary::open(TESSERA_FAKE_NVML);
  unsetenv("FAKE_NVML_SCRIPT");
  ASSERT_TRUE(library) << library.error().message();
  NvmlMigPartitions partitions(std::move(*library));
  EXPECT_TRUE(partitions.profiles(0).empty());
  std::remove(script.c_str());
}

}  // namespace
}  // namespace tessera::dra
