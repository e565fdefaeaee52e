#include "tessera/dra/dra_driver.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "claim_fixtures.hpp"
#include "fake_driver_parts.hpp"
#include "scratch_dir.hpp"

namespace tessera::dra {
namespace {

namespace fs = std::filesystem;

const ClaimRef kClaim{
    .ns = "serving", .name = "vllm-7d9f8-gpu-x2k4p", .uid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f"};

class DraDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::scratch_dir("dra");
    fs::create_directories(root_ / "cdi");
    claims_.objects["serving/vllm-7d9f8-gpu-x2k4p"] = test::allocated_claim();
  }
  void TearDown() override { fs::remove_all(root_); }

  DriverOptions options() const {
    DriverOptions o;
    o.node_name = "node-a";
    o.cdi_dir = (root_ / "cdi").string();
    o.checkpoint_path = (root_ / "checkpoint.json").string();
    return o;
  }
  std::unique_ptr<DraDriver> open() {
    auto d = DraDriver::open(options(), claims_, grants_);
    EXPECT_TRUE(d) << d.error().message();
    return d ? std::move(*d) : nullptr;
  }
  std::string spec_file() const {
    return (root_ / "cdi" / ("gpu.tessera.io-claim_" + kClaim.uid + ".json")).string();
  }
  nlohmann::json read_json(const std::string& path) const {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  }

  fs::path root_;
  test::FakeClaims claims_;
  test::FakeGrants grants_;
};

TEST_F(DraDriverTest, PrepareGrantsTheShareAndWritesTheCdiSpec) {
  auto driver = open();
  auto devices = driver->prepare(kClaim);
  ASSERT_TRUE(devices) << devices.error().message();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].request, "gpu");
  EXPECT_EQ((*devices)[0].pool, "node-a");
  EXPECT_EQ((*devices)[0].device, "gpu-0");
  EXPECT_EQ((*devices)[0].cdi_ids,
            (std::vector<std::string>{"gpu.tessera.io/claim=" + kClaim.uid + "-gpu-0",
                                      "nvidia.com/gpu=0"}));

  ASSERT_EQ(grants_.granted.size(), 1u);
  const nlohmann::json& g = grants_.granted[0];
  EXPECT_EQ(g["op"], "grant");
  EXPECT_EQ(g["claim"], kClaim.uid);
  EXPECT_EQ(g["tenant"], "vllm-7d9f8-gpu-x2k4p-6f1c9a2e");
  EXPECT_EQ(g["device"], 0);
  EXPECT_EQ(g["class"], "latency-critical");
  EXPECT_EQ(g["priority"], 10);
  EXPECT_EQ(g["tpot_slo_ms"], 50.0);
  EXPECT_EQ(g["ttft_slo_ms"], 1000.0);
  EXPECT_EQ(g["sm_share"], 0.5);
  EXPECT_EQ(g["memory_limit_bytes"], 20ull << 30);

  const nlohmann::json spec = read_json(spec_file());
  EXPECT_EQ(spec["kind"], "gpu.tessera.io/claim");
  const auto env = spec["devices"][0]["containerEdits"]["env"];
  EXPECT_NE(std::ranges::find(env, "TESSERA_TENANT=vllm-7d9f8-gpu-x2k4p-6f1c9a2e"), env.end());
  EXPECT_NE(std::ranges::find(env, "TESSERA_MEMORY_LIMIT=21474836480"), env.end());
  EXPECT_NE(std::ranges::find(env, "TESSERA_TPOT_SLO_MS=50"), env.end());
  const auto common = spec["containerEdits"];
  EXPECT_NE(std::ranges::find(common["env"], "LD_PRELOAD=/opt/tessera/lib/libtessera_interpose.so"),
            common["env"].end());
  EXPECT_EQ(common["mounts"][1]["hostPath"], "/run/tessera");
  // NVIDIA's spec brings the device nodes: tessera's adds none.
  EXPECT_FALSE(spec["devices"][0]["containerEdits"].contains("deviceNodes"));
  EXPECT_EQ(read_json(options().checkpoint_path)["claims"][kClaim.uid]["state"], "prepared");
}

TEST_F(DraDriverTest, WithoutNvidiasSpecTheGpusDeviceNodesAreInjected) {
  DriverOptions o = options();
  o.nvidia_cdi_kind.clear();
  auto driver = DraDriver::open(o, claims_, grants_);
  ASSERT_TRUE(driver);
  claims_.objects["serving/vllm-7d9f8-gpu-x2k4p"] = test::allocated_claim(kClaim.uid, "gpu-2");
  auto devices = (*driver)->prepare(kClaim);
  ASSERT_TRUE(devices) << devices.error().message();
  EXPECT_EQ((*devices)[0].cdi_ids.size(), 1u);
  const auto nodes = read_json(spec_file())["devices"][0]["containerEdits"]["deviceNodes"];
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0]["path"], "/dev/nvidia2");
}

TEST_F(DraDriverTest, PrepareIsIdempotentAcrossPluginRestarts) {
  auto first = open()->prepare(kClaim);
  ASSERT_TRUE(first);
  // The plugin restarts: the checkpoint answers, the API server and the daemon are not asked.
  auto driver = open();
  EXPECT_EQ(driver->prepared(), 1u);
  auto again = driver->prepare(kClaim);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)[0].cdi_ids, (*first)[0].cdi_ids);
  EXPECT_EQ(claims_.reads, 1);
  EXPECT_EQ(grants_.granted.size(), 1u);
}

TEST_F(DraDriverTest, UnprepareUndoesEverythingAndIsIdempotent) {
  auto driver = open();
  ASSERT_TRUE(driver->prepare(kClaim));
  ASSERT_TRUE(driver->unprepare(kClaim));
  EXPECT_FALSE(fs::exists(spec_file()));
  EXPECT_EQ(grants_.revoked, std::vector<std::string>{kClaim.uid});
  EXPECT_TRUE(grants_.live.empty());
  EXPECT_EQ(driver->prepared(), 0u);
  ASSERT_TRUE(driver->unprepare(kClaim));
  EXPECT_EQ(grants_.revoked.size(), 1u);
  // A restarted plugin unprepares a claim it prepared before.
  ASSERT_TRUE(driver->prepare(kClaim));
  driver = open();
  ASSERT_TRUE(driver->unprepare(kClaim));
  EXPECT_FALSE(fs::exists(spec_file()));
  EXPECT_EQ(grants_.revoked.size(), 2u);
}

TEST_F(DraDriverTest, AnUnprepareTheDaemonCannotTakeIsRetried) {
  auto driver = open();
  ASSERT_TRUE(driver->prepare(kClaim));
  grants_.unreachable = true;
  auto failed = driver->unprepare(kClaim);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("did not revoke"), std::string::npos);
  EXPECT_EQ(driver->prepared(), 1u);
  grants_.unreachable = false;
  ASSERT_TRUE(driver->unprepare(kClaim));
  EXPECT_EQ(driver->prepared(), 0u);
}

TEST_F(DraDriverTest, AFailedPrepareLeavesNothingBehind) {
  grants_.refuse = "device 0 has 0.25 of its SMs free to grant; claim asks 0.5";
  auto driver = open();
  auto refused = driver->prepare(kClaim);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("did not grant its share"), std::string::npos);
  EXPECT_NE(refused.error().message().find("0.25 of its SMs free"), std::string::npos);
  EXPECT_FALSE(fs::exists(spec_file()));
  EXPECT_EQ(driver->prepared(), 0u);
  EXPECT_TRUE(read_json(options().checkpoint_path)["claims"].empty());
  // Once there is room, the kubelet's retry prepares it.
  grants_.refuse.clear();
  EXPECT_TRUE(driver->prepare(kClaim));
}

TEST_F(DraDriverTest, BadClaimsAreRefusedWithoutSideEffects) {
  auto driver = open();
  ClaimRef missing = kClaim;
  missing.name = "gone";
  auto not_found = driver->prepare(missing);
  ASSERT_FALSE(not_found);
  EXPECT_NE(not_found.error().message().find("not found"), std::string::npos);
  claims_.objects["serving/vllm-7d9f8-gpu-x2k4p"] =
      test::allocated_claim(kClaim.uid, "gpu-0", "300");
  EXPECT_FALSE(driver->prepare(kClaim));
  nlohmann::json two = test::allocated_claim();
  auto second = two["status"]["allocation"]["devices"]["results"][0];
  second["device"] = "gpu-1";
  two["status"]["allocation"]["devices"]["results"].push_back(second);
  claims_.objects["serving/vllm-7d9f8-gpu-x2k4p"] = two;
  auto many = driver->prepare(kClaim);
  ASSERT_FALSE(many);
  EXPECT_NE(many.error().message().find("holds 2 devices"), std::string::npos);
  EXPECT_TRUE(grants_.granted.empty());
  EXPECT_EQ(driver->prepared(), 0u);
}

TEST_F(DraDriverTest, APrepareInterruptedMidwayIsUndoneThenDoneAgain) {
  // What a plugin killed between the grant and the CDI spec leaves: a "preparing" entry.
  {
    std::ofstream out(options().checkpoint_path);
    out << nlohmann::json{{"version", 1},
                          {"claims",
                           {{kClaim.uid,
                             {{"namespace", kClaim.ns},
                              {"name", kClaim.name},
                              {"state", "preparing"},
                              {"tenant", "vllm-7d9f8-gpu-x2k4p-6f1c9a2e"},
                              {"cdi_spec", spec_file()},
                              {"devices", nlohmann::json::array()}}}}}}
               .dump();
  }
  auto driver = open();
  auto devices = driver->prepare(kClaim);
  ASSERT_TRUE(devices) << devices.error().message();
  EXPECT_EQ(grants_.revoked, std::vector<std::string>{kClaim.uid});
  EXPECT_EQ(grants_.granted.size(), 1u);
  EXPECT_TRUE(fs::exists(spec_file()));
}

TEST_F(DraDriverTest, AnUnreadableCheckpointStopsThePluginFromStarting) {
  {
    std::ofstream out(options().checkpoint_path);
    out << "{\"version\": 1, \"claims\": {\"x\": {\"state\": 3}}}";
  }
  auto driver = DraDriver::open(options(), claims_, grants_);
  ASSERT_FALSE(driver);
  EXPECT_NE(driver.error().message().find("cannot be read"), std::string::npos);
}

TEST(DraTenantNames, AreValidTenantNamesThatShowTheClaim) {
  EXPECT_EQ(tenant_for({.ns = "a", .name = "train-0", .uid = "12345678-aaaa"}), "train-0-12345678");
  const std::string longest(253, 'x');
  const std::string t = tenant_for({.ns = "a", .name = longest + "-", .uid = "abcdef01-2345"});
  EXPECT_EQ(t.size(), 63u);
  EXPECT_TRUE(daemon::valid_tenant_name(t)) << t;
  EXPECT_TRUE(daemon::valid_tenant_name(tenant_for({.ns = "a", .name = "a.b-", .uid = "0"})));
}

// A claim of a MIG partition: the partition is made, the container gets it by UUID and its
// capability device nodes, and tesserad is not asked; unprepare removes it.
class DraMigTest : public DraDriverTest {
 protected:
  void SetUp() override {
    DraDriverTest::SetUp();
    claims_.objects["serving/vllm-7d9f8-gpu-x2k4p"] =
        test::allocated_claim(kClaim.uid, "gpu-0-mig-9-4");
    std::ofstream(root_ / "mig-minors") << "config 1\nmonitor 2\ngpu0/gi3/access 30\n"
                                           "gpu0/gi3/ci0/access 31\ngpu0/gi4/access 39\n";
  }
  std::unique_ptr<DraDriver> open_with_mig() {
    DriverOptions o = options();
    o.mig_minors_path = (root_ / "mig-minors").string();
    auto d = DraDriver::open(o, claims_, grants_, &mig_);
    EXPECT_TRUE(d) << d.error().message();
    return d ? std::move(*d) : nullptr;
  }
  test::FakeMigPartitions mig_;
};

TEST_F(DraMigTest, APartitionIsMadeAndGivenByItsUuidAndCapabilities) {
  auto driver = open_with_mig();
  auto devices = driver->prepare(kClaim);
  ASSERT_TRUE(devices) << devices.error().message();
  EXPECT_EQ((*devices)[0].device, "gpu-0-mig-9-4");
  EXPECT_EQ((*devices)[0].cdi_ids,
            (std::vector<std::string>{"gpu.tessera.io/claim=" + kClaim.uid + "-gpu-0-mig-9-4",
                                      "nvidia.com/gpu=0"}));
  ASSERT_EQ(mig_.live.size(), 1u);
  EXPECT_EQ(mig_.live.at(3).profile_id, 9);
  EXPECT_EQ(mig_.live.at(3).start, 4);
  EXPECT_TRUE(grants_.granted.empty()) << "tesserad has no part in a MIG partition";
  const nlohmann::json spec = read_json(spec_file());
  const auto& edits = spec["devices"][0]["containerEdits"];
  EXPECT_EQ(edits["env"][0], "CUDA_VISIBLE_DEVICES=MIG-5f2c0000-0000-4000-8000-000000000003");
  EXPECT_EQ(edits["deviceNodes"][0]["path"], "/dev/nvidia-caps/nvidia-cap30");
  EXPECT_EQ(edits["deviceNodes"][1]["path"], "/dev/nvidia-caps/nvidia-cap31");
  EXPECT_FALSE(spec.contains("containerEdits")) << "no interposer for a partition";
  const auto checkpoint = read_json(options().checkpoint_path)["claims"][kClaim.uid];
  EXPECT_EQ(checkpoint["mig"]["instance"], 3);

  // After a plugin restart, unprepare removes the partition the checkpoint names.
  driver = open_with_mig();
  ASSERT_TRUE(driver->unprepare(kClaim));
  EXPECT_TRUE(mig_.live.empty());
  EXPECT_FALSE(fs::exists(spec_file()));
  EXPECT_TRUE(grants_.revoked.empty());
}

TEST_F(DraMigTest, APartitionThatCannotBeGivenIsRemovedAndNothingIsLeft) {
  auto driver = open_with_mig();
  mig_.next = 4;  // gi4 has no compute instance entry in mig-minors
  auto refused = driver->prepare(kClaim);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("no entry 'gpu0/gi4/ci0/access'"), std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(mig_.live.empty());
  EXPECT_EQ(mig_.destroyed, 1);
  EXPECT_FALSE(fs::exists(spec_file()));
  EXPECT_EQ(driver->prepared(), 0u);

  mig_.refuse = "the placement is taken";
  refused = driver->prepare(kClaim);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("MIG partition gpu-0-mig-9-4: the placement is taken"),
            std::string::npos)
      << refused.error().message();
  EXPECT_EQ(driver->prepared(), 0u);
}

TEST_F(DraMigTest, WithoutNvmlAPartitionIsRefusedSayingSo) {
  auto refused = open()->prepare(kClaim);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("has no NVML to make it"), std::string::npos);
}

}  // namespace
}  // namespace tessera::dra
