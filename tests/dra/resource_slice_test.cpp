#include "tessera/dra/resource_slice.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../k8s/fake_api_server.hpp"
#include "scratch_dir.hpp"
#include "tessera/dra/slice_publisher.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/hw/topology/presets.hpp"

namespace tessera::dra {
namespace {

namespace fs = std::filesystem;

// An H100 server's topology with what NVML and hwloc add on a real node: the driver's model
// name, a UUID and a PCI bus id per GPU.
hw::HostTopology h100_node() {
  auto preset = hw::preset("h100-2s", "node-a");
  EXPECT_TRUE(preset) << preset.error().message();
  nlohmann::json j = hw::to_json(*preset);
  int i = 0;
  for (auto& node : j["nodes"]) {
    if (node["kind"] != "gpu") continue;
    node["model"] = "NVIDIA H100 80GB HBM3";
    node["uuid"] = fmt::format("GPU-0000000{}-aaaa-bbbb-cccc-000000000000", i);
    node["pci_bus_id"] = fmt::format("0000:{:02x}:00.0", 0x12 + 0x10 * i);
    ++i;
  }
  auto back = hw::topology_from_json(j, "test");
  EXPECT_TRUE(back) << back.error().message();
  return *back;
}

// /sys as the kernel lays it out: the bus's device links point into the device tree under the
// root complex each GPU hangs from.
fs::path fake_sysfs(const std::vector<std::string>& bus_ids) {
  const fs::path root = test::scratch_dir("fake-sysfs");
  fs::create_directories(root / "bus/pci/devices");
  for (std::size_t i = 0; i < bus_ids.size(); ++i) {
    const fs::path device = root / "devices" / fmt::format("pci0000:{:02x}", 16 * i) /
                            fmt::format("0000:{:02x}:01.0", 16 * i) / bus_ids[i];
    fs::create_directories(device);
    fs::create_symlink(fs::relative(device, root / "bus/pci/devices"),
                       root / "bus/pci/devices" / bus_ids[i]);
  }
  return root;
}

TEST(ResourceSlice, ListsEveryGpuAsAShareableDeviceWithItsAttributes) {
  const hw::HostTopology topology = h100_node();
  const fs::path sysfs = fake_sysfs({"0000:12:00.0", "0000:22:00.0"});
  const auto gpus = slice_gpus(topology, sysfs.string());
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[0].catalog_model, "H100-SXM5-80GB");
  EXPECT_EQ(gpus[0].sms, 132);
  EXPECT_TRUE(gpus[0].mig_capable);
  EXPECT_EQ(gpus[0].pcie_root, "pci0000:00");
  EXPECT_EQ(gpus[1].pcie_root, "pci0000:10");
  EXPECT_EQ(gpus[2].pcie_root, "");  // sysfs does not have it

  const nlohmann::json slice = resource_slices("gpu.tessera.io", "node-a", 3, gpus)[0];
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(slice["metadata"]["name"], "node-a-gpu.tessera.io");
  EXPECT_EQ(slice["spec"]["pool"]["name"], "node-a");
  EXPECT_EQ(slice["spec"]["pool"]["generation"], 3);
  EXPECT_EQ(slice["spec"]["nodeName"], "node-a");
  const nlohmann::json& d = slice["spec"]["devices"][1];
  EXPECT_EQ(d["name"], "gpu-1");
  EXPECT_EQ(d["allowMultipleAllocations"], true);
  EXPECT_EQ(d["attributes"]["uuid"]["string"], "GPU-00000001-aaaa-bbbb-cccc-000000000000");
  EXPECT_EQ(d["attributes"]["smCount"]["int"], 132);
  EXPECT_EQ(d["attributes"]["numaNode"]["int"], 0);
  EXPECT_EQ(d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"], "pci0000:10");
  EXPECT_EQ(d["capacity"]["smPercent"]["value"], "100");
  EXPECT_EQ(d["capacity"]["smPercent"]["requestPolicy"]["validRange"]["step"], "1");
  const std::int64_t memory = std::stoll(d["capacity"]["memory"]["value"].get<std::string>());
  EXPECT_EQ(memory % (1 << 20), 0);
  EXPECT_GT(memory, 79LL << 30);
  fs::remove_all(sysfs);
}

TEST(ResourceSlice, AGpuOutsideTheCatalogIsPublishedWithWhatIsKnown) {
  hw::HostTopology topology = h100_node();
  nlohmann::json j = hw::to_json(topology);
  for (auto& node : j["nodes"]) {
    if (node["kind"] == "gpu") node["model"] = "NVIDIA Future GPU";
  }
  const auto gpus = slice_gpus(*hw::topology_from_json(j, "test"), "/nonexistent");
  EXPECT_EQ(gpus[0].sms, 0);
  const nlohmann::json d = resource_slices("gpu.tessera.io", "n", 1, gpus)[0]["spec"]["devices"][0];
  EXPECT_FALSE(d["attributes"].contains("smCount"));
  EXPECT_EQ(d["attributes"]["productName"]["string"], "NVIDIA Future GPU");
}

class SlicePublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_ = test::scratch_dir("slice") / "token";
    std::ofstream(token_) << "t\n";
  }
  SlicePublisher publisher(const test::FakeApiServer& api) {
    auto client = k8s::ApiServerClient::create(
        {.url = api.url(), .token_file = token_.string(), .ca_file = ""});
    EXPECT_TRUE(client);
    return SlicePublisher(std::move(*client), "gpu.tessera.io", "node-a");
  }
  fs::path token_;
  std::vector<SliceGpu> gpus_ = slice_gpus(h100_node(), "/nonexistent");
};

TEST_F(SlicePublisherTest, CreatesTheSliceAtGenerationOne) {
  test::FakeApiServer api([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET") test::status_answer(res, 404, "not found");
  });
  auto written = publisher(api).publish(gpus_);
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_TRUE(*written);
  const auto last = api.last();
  EXPECT_EQ(last.method, "PATCH");
  EXPECT_EQ(last.path, "/apis/resource.k8s.io/v1/resourceslices/node-a-gpu.tessera.io");
  EXPECT_EQ(last.field_manager, "tessera-dra-plugin");
  EXPECT_EQ(last.force, "true");
  EXPECT_EQ(last.body["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(last.body["spec"]["devices"].size(), 8u);
}

TEST_F(SlicePublisherTest, LeavesAnEqualSliceAloneAndBumpsTheGenerationOfAChangedOne) {
  const nlohmann::json same = resource_slices("gpu.tessera.io", "node-a", 4, gpus_)[0];
  test::FakeApiServer unchanged([same](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET") res.set_content(same.dump(), "application/json"), res.status = 200;
  });
  auto left = publisher(unchanged).publish(gpus_);
  ASSERT_TRUE(left);
  EXPECT_FALSE(*left);
  EXPECT_EQ(unchanged.requests().size(), 1u);

  nlohmann::json older = same;
  older["spec"]["devices"].erase(7);
  test::FakeApiServer changed([older](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET") res.set_content(older.dump(), "application/json"), res.status = 200;
  });
  auto written = publisher(changed).publish(gpus_);
  ASSERT_TRUE(written);
  EXPECT_TRUE(*written);
  EXPECT_EQ(changed.last().body["spec"]["pool"]["generation"], 5);
}

TEST_F(SlicePublisherTest, RetriesAConflictAndReportsOtherRefusals) {
  int patches = 0;
  test::FakeApiServer conflicted([&patches](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET") test::status_answer(res, 404, "not found");
    if (req.method == "PATCH" && ++patches == 1)
      test::status_answer(res, 409, "the object has been modified");
  });
  auto written = publisher(conflicted).publish(gpus_);
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_EQ(patches, 2);

  test::FakeApiServer forbidden([](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET") test::status_answer(res, 404, "not found");
    if (req.method == "PATCH") {
      test::status_answer(res, 403,
                          "resourceslices.resource.k8s.io is forbidden: User cannot patch");
    }
  });
  auto refused = publisher(forbidden).publish(gpus_);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("answered 403"), std::string::npos);
  EXPECT_NE(refused.error().message().find("is forbidden"), std::string::npos);
}

// A GPU in MIG mode is published as its partitions: a counter set of its slices, and a device per
// profile and placement consuming the memory slices it covers and its compute slices.
TEST(ResourceSlice, AMigGpuIsPublishedAsPartitionsThatConsumeItsSlices) {
  std::vector<SliceGpu> gpus = slice_gpus(h100_node(), "/nonexistent");
  gpus.resize(2);
  const hw::MigGeometry h100 = *hw::find_mig_geometry("h100");
  gpus[0].mig_profiles = h100.profiles;
  const auto slices = resource_slices("gpu.tessera.io", "node-a", 7, gpus);
  ASSERT_EQ(slices.size(), 2u);
  for (const auto& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 7);
  }
  EXPECT_EQ(slices[0]["metadata"]["name"], "node-a-gpu.tessera.io");
  EXPECT_EQ(slices[1]["metadata"]["name"], "node-a-gpu.tessera.io-2");
  const nlohmann::json& counters = slices[0]["spec"]["sharedCounters"];
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_FALSE(slices[0]["spec"].contains("devices"));
  EXPECT_EQ(counters[0]["name"], "gpu-0-mig");
  EXPECT_EQ(counters[0]["counters"]["computeSlices"]["value"], "7");
  EXPECT_EQ(counters[0]["counters"]["memorySlice7"]["value"], "1");

  std::size_t placements = 0;
  for (const auto& p : h100.profiles) placements += p.placement_starts.size();
  const nlohmann::json& devices = slices[1]["spec"]["devices"];
  ASSERT_EQ(devices.size(), placements + 1);
  EXPECT_EQ(devices.back()["name"], "gpu-1");
  EXPECT_EQ(devices.back()["attributes"]["type"]["string"], "share");
  const hw::MigProfile& three = **h100.find("3g.40gb");
  const std::string name = mig_device_name(0, three.id, 4);
  const auto it = std::ranges::find_if(devices, [&](const auto& d) { return d["name"] == name; });
  ASSERT_NE(it, devices.end()) << name;
  EXPECT_EQ((*it)["attributes"]["type"]["string"], "mig");
  EXPECT_EQ((*it)["attributes"]["profile"]["string"], "3g.40gb");
  EXPECT_EQ((*it)["attributes"]["smCount"]["int"], three.sms);
  const nlohmann::json& used = (*it)["consumesCounters"][0];
  EXPECT_EQ(used["counterSet"], "gpu-0-mig");
  EXPECT_EQ(used["counters"]["computeSlices"]["value"], "3");
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(used["counters"].contains(fmt::format("memorySlice{}", i)), i >= 4) << i;
  }
  EXPECT_FALSE((*it)["attributes"].contains("resource.kubernetes.io/pcieRoot"));
}

TEST(ResourceSlice, EightMigGpusSpreadTheirPartitionsOverSlicesOf64) {
  std::vector<SliceGpu> gpus = slice_gpus(h100_node(), "/nonexistent");
  const hw::MigGeometry h100 = *hw::find_mig_geometry("h100");
  std::size_t placements = 0;
  for (auto& g : gpus) g.mig_profiles = h100.profiles;
  for (const auto& p : h100.profiles) placements += p.placement_starts.size();
  const auto slices = resource_slices("gpu.tessera.io", "node-a", 1, gpus);
  EXPECT_EQ(slices[0]["spec"]["sharedCounters"].size(), 8u);
  std::size_t devices = 0;
  for (std::size_t i = 1; i < slices.size(); ++i) {
    EXPECT_LE(slices[i]["spec"]["devices"].size(), 64u);
    devices += slices[i]["spec"]["devices"].size();
  }
  EXPECT_EQ(devices, 8 * placements);
  EXPECT_EQ(slices.back()["spec"]["pool"]["resourceSliceCount"], slices.size());
}

TEST_F(SlicePublisherTest, APoolOfSeveralSlicesIsWrittenAtOneGeneration) {
  std::vector<SliceGpu> gpus = gpus_;
  gpus[0].mig_profiles = hw::find_mig_geometry("h100")->profiles;
  const auto slices = resource_slices("gpu.tessera.io", "node-a", 3, gpus);
  // The API server has the first slice as it should be, at generation 3, and not the second.
  test::FakeApiServer api([first = slices[0]](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET") return;
    if (req.path.ends_with("/node-a-gpu.tessera.io")) {
      res.status = 200;
      res.set_content(first.dump(), "application/json");
    } else {
      test::status_answer(res, 404, "not found");
    }
  });
  auto written = publisher(api).publish(gpus);
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_TRUE(*written);
  std::vector<std::string> patched;
  for (const auto& r : api.requests()) {
    if (r.method != "PATCH") continue;
    patched.push_back(r.path.substr(r.path.rfind('/') + 1));
    EXPECT_EQ(r.body["spec"]["pool"]["generation"], 4) << r.path;
  }
  EXPECT_EQ(patched,
            (std::vector<std::string>{"node-a-gpu.tessera.io", "node-a-gpu.tessera.io-2"}));
}

}  // namespace
}  // namespace tessera::dra
