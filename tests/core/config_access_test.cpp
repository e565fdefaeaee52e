// Typed accessors of ConfigNode on YAML and JSON input.
#include <gtest/gtest.h>

#include <string>

#include "tessera/core/config.hpp"

namespace tessera::core {
namespace {

ConfigNode parse_ok(std::string_view text, std::string name = "test.yaml") {
  auto r = ConfigNode::parse(text, std::move(name));
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r.value();
}

constexpr std::string_view kScenario = R"(name: demo
gpu: H100-SXM5-80GB
seed: 42
ratio: 0.75
enabled: yes
duration: 60s
modes: [exclusive, mps]
tenants:
  - name: chat
    priority: 10
  - name: trainer
    priority: -1
)";

TEST(ConfigAccess, ReadsScalarsOfEveryType) {
  ConfigNode root = parse_ok(kScenario);
  EXPECT_TRUE(root.is_map());
  EXPECT_EQ(root.source(), "test.yaml");
  EXPECT_EQ(root.path(), "");
  EXPECT_EQ(root.at("name")->as_string().value(), "demo");
  EXPECT_EQ(root.at("seed")->as_int().value(), 42);
  EXPECT_DOUBLE_EQ(root.at("ratio")->as_double().value(), 0.75);
  EXPECT_TRUE(root.at("enabled")->as_bool().value());
  EXPECT_EQ(root.at("duration")->as_duration().value(), seconds(60));
  // An integer is a number too.
  EXPECT_DOUBLE_EQ(root.at("seed")->as_double().value(), 42.0);
}

TEST(ConfigAccess, ListsGiveElementsWithIndexedPaths) {
  ConfigNode root = parse_ok(kScenario);
  auto tenants = root.at("tenants")->items();
  ASSERT_TRUE(tenants.has_value());
  ASSERT_EQ(tenants->size(), 2u);
  EXPECT_EQ((*tenants)[0].path(), "tenants[0]");
  EXPECT_EQ((*tenants)[1].path(), "tenants[1]");
  EXPECT_EQ((*tenants)[1].at("priority")->as_int().value(), -1);
  EXPECT_EQ((*tenants)[1].at("priority")->path(), "tenants[1].priority");
  EXPECT_EQ((*tenants)[1].line(), 11);
  EXPECT_EQ((*tenants)[1].column(), 5);

  auto modes = root.at("modes")->items();
  ASSERT_TRUE(modes.has_value());
  ASSERT_EQ(modes->size(), 2u);
  EXPECT_EQ((*modes)[1].as_string().value(), "mps");
  EXPECT_TRUE(root.at("modes")->is_sequence());
}

TEST(ConfigAccess, KeysComeInFileOrder) {
  ConfigNode root = parse_ok("zeta: 1\nalpha: 2\nmid: 3\n");
  EXPECT_EQ(root.keys(), (std::vector<std::string>{"zeta", "alpha", "mid"}));
  EXPECT_TRUE(parse_ok("[1, 2]").keys().empty());
}

TEST(ConfigAccess, OptionalFieldsFallBackOnlyWhenAbsent) {
  ConfigNode root = parse_ok("rate: 4\nname: chat\nempty: ~\nslo: 50ms\nflag: off\n");
  EXPECT_EQ(root.string_or("name", "x").value(), "chat");
  EXPECT_EQ(root.string_or("missing", "x").value(), "x");
  EXPECT_DOUBLE_EQ(root.double_or("rate", 1).value(), 4);
  EXPECT_DOUBLE_EQ(root.double_or("missing", 1.5).value(), 1.5);
  EXPECT_EQ(root.int_or("rate", 1).value(), 4);
  EXPECT_EQ(root.int_or("missing", 9).value(), 9);
  EXPECT_FALSE(root.bool_or("flag", true).value());
  EXPECT_TRUE(root.bool_or("missing", true).value());
  EXPECT_EQ(root.duration_or("slo", 0).value(), millis(50));
  EXPECT_EQ(root.duration_or("missing", millis(7)).value(), millis(7));
  // An explicit null is the same as leaving the field out.
  EXPECT_EQ(root.int_or("empty", 3).value(), 3);
  // A present field of the wrong type is an error, never the fallback.
  EXPECT_FALSE(root.int_or("name", 3).has_value());
  EXPECT_FALSE(root.duration_or("rate", 0).has_value());
  EXPECT_FALSE(root.bool_or("rate", false).has_value());
}

TEST(ConfigAccess, HasAgreesWithFind) {
  ConfigNode root = parse_ok("a: 1\nb: ~\nc: []\n");
  EXPECT_TRUE(root.has("a"));
  EXPECT_TRUE(root.find("a").has_value());
  EXPECT_FALSE(root.has("b"));  // null is absent, so `has` and `find` never disagree
  EXPECT_FALSE(root.find("b").has_value());
  EXPECT_TRUE(root.has("c"));
  EXPECT_FALSE(root.has("zzz"));
  EXPECT_FALSE(root.at("a")->has("a"));  // a scalar has no fields
}

TEST(ConfigAccess, NumbersParseStrictly) {
  ConfigNode root = parse_ok(
      "plus: +2\nneg: -3.5\nexp: 1e3\nword: abc\nsuffix: 1.5x\nnan: .nan\ninf: .inf\n"
      "hex: 0x10\nfloat: 4.2\nblank: ''\nplusminus: +-5\nbig: 99999999999999999999\n");
  EXPECT_DOUBLE_EQ(root.at("plus")->as_double().value(), 2);
  EXPECT_DOUBLE_EQ(root.at("neg")->as_double().value(), -3.5);
  EXPECT_DOUBLE_EQ(root.at("exp")->as_double().value(), 1000);
  for (const char* bad : {"word", "suffix", "nan", "inf", "blank", "plusminus"}) {
    EXPECT_FALSE(root.at(bad)->as_double().has_value()) << bad;
  }
  EXPECT_EQ(root.at("neg")->as_int().has_value(), false);
  for (const char* bad : {"float", "hex", "exp", "word", "blank", "big", "plusminus"}) {
    EXPECT_FALSE(root.at(bad)->as_int().has_value()) << bad;
  }
}

TEST(ConfigAccess, BooleansAcceptYamlWords) {
  ConfigNode root = parse_ok("a: true\nb: yes\nc: on\nd: false\ne: no\nf: off\ng: maybe\nh: 1\n");
  for (const char* t : {"a", "b", "c"}) EXPECT_TRUE(root.at(t)->as_bool().value()) << t;
  for (const char* f : {"d", "e", "f"}) EXPECT_FALSE(root.at(f)->as_bool().value()) << f;
  EXPECT_FALSE(root.at("g")->as_bool().has_value());
  EXPECT_FALSE(root.at("h")->as_bool().has_value());
}

TEST(ConfigAccess, WrongShapesAreErrors) {
  ConfigNode root = parse_ok("list: [1, 2]\nmap: {a: 1}\nscalar: 5\n");
  EXPECT_FALSE(root.at("list")->as_string().has_value());
  EXPECT_FALSE(root.at("map")->as_int().has_value());
  EXPECT_FALSE(root.at("map")->as_duration().has_value());
  EXPECT_FALSE(root.at("scalar")->items().has_value());
  EXPECT_FALSE(root.at("scalar")->at("x").has_value());
  EXPECT_FALSE(root.at("list")->check_keys({"a"}).has_value());
  EXPECT_TRUE(root.at("map")->check_keys({"a"}).has_value());
}

TEST(ConfigAccess, JsonGoesThroughTheSameAccessors) {
  ConfigNode root = parse_ok(R"({
  "gpu": "h100",
  "seed": 7,
  "tenants": [
    {"name": "chat", "slo": {"ttft": "200ms"}},
    {"name": "batch"}
  ]
})",
                             "scenario.json");
  EXPECT_EQ(root.at("gpu")->as_string().value(), "h100");
  EXPECT_EQ(root.at("seed")->as_int().value(), 7);
  auto tenants = root.at("tenants")->items().value();
  ASSERT_EQ(tenants.size(), 2u);
  auto ttft = tenants[0].at("slo")->at("ttft");
  ASSERT_TRUE(ttft.has_value());
  EXPECT_EQ(ttft->as_duration().value(), millis(200));
  EXPECT_EQ(ttft->path(), "tenants[0].slo.ttft");
  EXPECT_EQ(ttft->line(), 5);
  EXPECT_EQ(tenants[1].line(), 6);
  EXPECT_EQ(root.source(), "scenario.json");
}

}  // namespace
}  // namespace tessera::core
