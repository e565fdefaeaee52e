#include "tessera/dra/cdi_spec.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scratch_dir.hpp"

namespace tessera::dra {
namespace {

CdiSpec good_spec() {
  CdiSpec spec{.kind = "gpu.tessera.io/claim", .devices = {}, .common = {}};
  spec.devices.push_back(
      {.name = "6f1c9a2e-gpu-0",
       .edits = {.env = {"TESSERA_TENANT=chat"}, .device_nodes = {"/dev/nvidia0"}, .mounts = {}}});
  spec.common.env = {"LD_PRELOAD=/opt/tessera/lib/libtessera_interpose.so"};
  spec.common.mounts = {{"/opt/tessera/lib/libtessera_interpose.so",
                         "/opt/tessera/lib/libtessera_interpose.so",
                         {"ro", "nosuid", "nodev", "bind"}}};
  return spec;
}

std::string error_of(const CdiSpec& spec) {
  auto s = validate(spec);
  return s ? std::string() : s.error().message();
}

TEST(CdiSpec, AGoodSpecValidatesAndRoundTrips) {
  const CdiSpec spec = good_spec();
  ASSERT_EQ(error_of(spec), "");
  const nlohmann::json j = to_json(spec);
  EXPECT_EQ(j["cdiVersion"], "0.6.0");
  EXPECT_EQ(j["kind"], "gpu.tessera.io/claim");
  EXPECT_EQ(j["devices"][0]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia0");
  EXPECT_EQ(j["containerEdits"]["mounts"][0]["options"][0], "ro");
  auto back = cdi_spec_from_json(j);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(to_json(*back), j);
}

TEST(CdiSpec, KindNeedsVendorAndClassOfTheAllowedCharacters) {
  for (const char* kind : {"gpu.tessera.io", "gpu.tessera.io/", "/claim", "-gpu.io/claim",
                           "gpu.tessera.io/cl.aim", "gpu.tessera.io/claim-", "gpu tessera/claim"}) {
    CdiSpec spec = good_spec();
    spec.kind = kind;
    EXPECT_NE(error_of(spec), "") << kind;
  }
}

TEST(CdiSpec, DeviceNamesFollowTheSpecificationsRules) {
  for (const char* name : {"", "-gpu-0", "gpu-0-", "gpu/0", "gpu 0", "gpu=0"}) {
    CdiSpec spec = good_spec();
    spec.devices[0].name = name;
    EXPECT_NE(error_of(spec), "") << name;
  }
  CdiSpec spec = good_spec();
  spec.devices[0].name = "0abc:def_1.2-x";
  EXPECT_EQ(error_of(spec), "");
  spec.devices.push_back(spec.devices[0]);
  EXPECT_NE(error_of(spec).find("appears twice"), std::string::npos);
}

TEST(CdiSpec, EditsAreCheckedAndNamed) {
  CdiSpec spec = good_spec();
  spec.devices[0].edits.env.push_back("NO_VALUE");
  EXPECT_NE(error_of(spec).find("'NO_VALUE' is not NAME=VALUE"), std::string::npos);
  spec = good_spec();
  spec.devices[0].edits.device_nodes = {"dev/nvidia0"};
  EXPECT_NE(error_of(spec).find("not an absolute path"), std::string::npos);
  spec = good_spec();
  spec.common.mounts[0].container_path = "lib/x.so";
  EXPECT_NE(error_of(spec).find("containerPath 'lib/x.so'"), std::string::npos);
  spec = good_spec();
  spec.devices[0].edits = {};
  EXPECT_NE(error_of(spec).find("edits nothing"), std::string::npos);
  spec = good_spec();
  spec.devices.clear();
  EXPECT_NE(error_of(spec).find("names no device"), std::string::npos);
}

TEST(CdiSpec, ReadingBackRefusesUnknownFieldsAndOtherVersions) {
  nlohmann::json j = to_json(good_spec());
  j["devices"][0]["containerEdits"]["hooks"] = nlohmann::json::array();
  auto bad = cdi_spec_from_json(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("unknown field 'hooks'"), std::string::npos);
  j = to_json(good_spec());
  j["cdiVersion"] = "0.3.0";
  EXPECT_FALSE(cdi_spec_from_json(j));
}

TEST(CdiSpec, FilesAreWrittenWholeAndRemovedOnce) {
  const auto folder = test::scratch_dir("cdi");
  const std::string path = spec_path(folder.string(), "gpu.tessera.io/claim", "uid-1");
  EXPECT_EQ(path, folder.string() + "/gpu.tessera.io-claim_uid-1.json");
  ASSERT_TRUE(write_spec(path, good_spec()));
  std::ifstream in(path);
  auto back = cdi_spec_from_json(nlohmann::json::parse(in));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->devices[0].name, "6f1c9a2e-gpu-0");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  CdiSpec invalid = good_spec();
  invalid.kind = "nokind";
  EXPECT_FALSE(write_spec(folder.string() + "/other.json", invalid));
  EXPECT_FALSE(std::filesystem::exists(folder / "other.json"));
  EXPECT_TRUE(remove_spec(path));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(remove_spec(path));
  EXPECT_EQ(qualified_device_id("gpu.tessera.io/claim", "uid-1-gpu-0"),
            "gpu.tessera.io/claim=uid-1-gpu-0");
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace tessera::dra
