// Every config error must say where: file, line, column and the dotted field path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/core/config.hpp"

namespace tessera::core {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::string_view kDemo = R"(name: demo
tenants:
  - slo: {ttft: fast, tpot: 50ms}
    name: chat
  - name: trainer
    sl0: {ttft: 1s}
)";

ConfigNode demo() {
  auto r = ConfigNode::parse(kDemo, "demo.yaml");
  EXPECT_TRUE(r.has_value());
  return r.value();
}

TEST(ConfigErrors, WrongTypeNamesFileLineColumnAndPath) {
  auto tenants = demo().at("tenants")->items().value();
  auto r = tenants[0].at("slo")->at("ttft")->as_duration();
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), StartsWith("demo.yaml:3:17: tenants[0].slo.ttft: "));
  EXPECT_THAT(r.error().message(), HasSubstr("'fast'"));
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
}

TEST(ConfigErrors, MissingFieldPointsAtTheParent) {
  auto tenants = demo().at("tenants")->items().value();
  auto r = tenants[1].at("slo");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "demo.yaml:5:5: tenants[1]: missing required field 'slo'");
}

TEST(ConfigErrors, UnknownKeyNamesTheKeyItsPlaceAndTheAllowedOnes) {
  auto tenants = demo().at("tenants")->items().value();
  EXPECT_TRUE(tenants[0].check_keys({"name", "slo"}).has_value());
  auto r = tenants[1].check_keys({"name", "slo"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "demo.yaml:6:5: tenants[1].sl0: unknown field 'sl0'; allowed here: name, slo");
}

TEST(ConfigErrors, ErrorsAtTheRootSayDocument) {
  ConfigNode root = demo();
  EXPECT_EQ(root.error("no GPU named").message(), "demo.yaml:1:1: document: no GPU named");
  auto r = root.check_keys({"name"});
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("demo.yaml:2:1: tenants: unknown field 'tenants'"));
}

TEST(ConfigErrors, NotAListNotAMap) {
  ConfigNode root = demo();
  auto items = root.at("name")->items();
  ASSERT_FALSE(items.has_value());
  EXPECT_EQ(items.error().message(), "demo.yaml:1:7: name: expected a list, got 'demo'");
  auto field = root.at("tenants")->at("slo");
  ASSERT_FALSE(field.has_value());
  EXPECT_EQ(field.error().message(),
            "demo.yaml:3:3: tenants: expected a mapping with field 'slo', got a list");
}

TEST(ConfigErrors, NonScalarKeysAreReportedNotThrown) {
  // A key that is itself a list or a map is legal YAML but never a valid field name.
  auto root = ConfigNode::parse("? [a, b]\n: 1\nname: x\n", "keys.yaml");
  ASSERT_TRUE(root.has_value());
  auto r = root->check_keys({"name"});
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), StartsWith("keys.yaml:1:3: "));
  EXPECT_THAT(r.error().message(), HasSubstr("a list"));
  EXPECT_EQ(root->keys().size(), 2u);
  EXPECT_EQ(root->at("name")->as_string().value(), "x");
}

TEST(ConfigErrors, MalformedYamlIsAParseErrorWithALine) {
  auto r = ConfigNode::parse("name: demo\ntenants: [a, b\nseed: 1\n", "broken.yaml");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kParse);
  EXPECT_EQ(r.error().domain(), Domain::kConfig);
  EXPECT_THAT(r.error().message(), StartsWith("broken.yaml:3:"));

  auto tab = ConfigNode::parse("a:\n  b: 1\n c: 2\n", "indent.yaml");
  ASSERT_FALSE(tab.has_value());
  EXPECT_THAT(tab.error().message(), StartsWith("indent.yaml:3:"));
}

TEST(ConfigErrors, MalformedJsonIsAParseErrorWithALine) {
  auto r = ConfigNode::parse("{\n  \"a\": 1,\n  \"b\": [1, 2\n}\n", "bad.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kParse);
  EXPECT_THAT(r.error().message(), StartsWith("bad.json:4:"));
}

// An error quotes at most 80 bytes of a value, with its length, however long the value is.
TEST(ConfigErrors, ALongValueIsQuotedShort) {
  const std::string value(1'000'000, '7');
  const std::string head(80, '7');
  auto root =
      ConfigNode::parse(fmt::format("seed: {0}x\nwait: {0}\n? {0}\n: 1\n", value), "long.yaml");
  ASSERT_TRUE(root.has_value()) << root.error().message();

  auto seed = root->get_int("seed");
  ASSERT_FALSE(seed.has_value());
  EXPECT_EQ(
      seed.error().message(),
      fmt::format("long.yaml:1:7: seed: expected an integer, got '{}...' (1000001 bytes)", head));

  auto wait = root->get_duration("wait");
  ASSERT_FALSE(wait.has_value());
  EXPECT_LT(wait.error().message().size(), 300U) << wait.error().message().substr(0, 300);
  EXPECT_THAT(wait.error().message(), HasSubstr(fmt::format("'{}...' (1000000 bytes)", head)));

  auto keys = root->check_keys({"seed", "wait"});
  ASSERT_FALSE(keys.has_value());
  EXPECT_LT(keys.error().message().size(), 400U) << keys.error().message().substr(0, 400);
  EXPECT_THAT(keys.error().message(), HasSubstr(fmt::format("unknown field '{}...'", head)));
}

// A long value is cut between UTF-8 sequences, never inside one.
TEST(ConfigErrors, QuotingCutsWholeCharacters) {
  EXPECT_EQ(quote_value("short"), "'short'");
  const std::string eighty(80, 'a');
  EXPECT_EQ(quote_value(eighty), fmt::format("'{}'", eighty));
  const std::string accents = std::string(79, 'a') + "\xC3\xA9\xC3\xA9";  // 79 + two 2-byte é
  EXPECT_EQ(quote_value(accents), fmt::format("'{}...' (83 bytes)", std::string(79, 'a')));
}

TEST(ConfigErrors, EmptyDocumentIsRejected) {
  for (const char* text : {"", "   \n", "# only a comment\n", "~"}) {
    auto r = ConfigNode::parse(text, "empty.yaml");
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().message(), "empty.yaml: the document is empty");
  }
}

class ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_config_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFile, LoadsAndNamesTheFileInErrors) {
  const std::string path = write("scenario.yaml", "gpu: h100\nseed: many\n");
  auto root = ConfigNode::load_file(path);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->source(), path);
  auto seed = root->at("seed")->as_int();
  ASSERT_FALSE(seed.has_value());
  EXPECT_EQ(seed.error().message(), path + ":2:7: seed: expected an integer, got 'many'");
}

TEST_F(ConfigFile, MissingFileSaysSo) {
  const std::string path = (dir_ / "nope.yaml").string();
  auto r = ConfigNode::load_file(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  EXPECT_EQ(r.error().message(), "cannot open file '" + path + "': no such file or directory");
}

TEST_F(ConfigFile, DirectoryIsNotAFile) {
  auto r = ConfigNode::load_file(dir_.string());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr(dir_.string()));
  EXPECT_THAT(r.error().message(), HasSubstr("is a directory"));
}

// A path that never ends (or a file far past any real document) is refused after 64 MiB instead
// of being read until memory runs out.
TEST_F(ConfigFile, AnEndlessFileIsCutAtTheDocumentCap) {
  auto r = ConfigNode::load_file("/dev/zero", "job file");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "job file '/dev/zero' is larger than 64 MiB, the most tessera reads from one job file");
}

TEST_F(ConfigFile, MalformedFileGivesItsLine) {
  const std::string path = write("broken.yaml", "a: 1\nb: [\n");
  auto r = ConfigNode::load_file(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kParse);
  EXPECT_THAT(r.error().message(), StartsWith(path + ":"));
}

}  // namespace
}  // namespace tessera::core
