// `tessera extender --topology-dir`: one bad file costs its own node only.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tessera/cli/extender_command.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/binder.hpp"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;

class TopologyDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("topology_dir_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  void write_node(const std::string& node) {
    auto t = hw::preset("h100-2s", node);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    write(node + ".json", hw::to_json(*t).dump());
  }
  fs::path dir_;
  k8s::ExtenderService service_{k8s::ExtenderConfig{}, std::make_shared<k8s::RecordOnlyBinder>()};
};

TEST_F(TopologyDir, ABadFileIsSkippedAndTheOthersLoad) {
  write_node("a");
  write("b.json", "{ not json");
  write_node("c");
  write("notes.txt", "ignored: not .json or .xml");
  const auto loaded = load_topology_dir(service_, dir_.string());
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message();
  EXPECT_EQ(*loaded, 2);
  EXPECT_EQ(service_.node_count(), 2u);
}

TEST_F(TopologyDir, ADirectoryOfOnlyBadFilesIsAnErrorNamingIt) {
  write("b.json", "{ not json");
  write("d.xml", "<topology");
  const auto loaded = load_topology_dir(service_, dir_.string());
  ASSERT_FALSE(loaded.has_value());
  EXPECT_NE(loaded.error().message().find("none of its 2 topology files could be loaded"),
            std::string::npos)
      << loaded.error().message();
  EXPECT_EQ(service_.node_count(), 0u);
}

}  // namespace
}  // namespace tessera::cli
