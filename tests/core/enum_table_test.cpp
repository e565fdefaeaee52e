#include "tessera/core/enum_table.hpp"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

enum class Fruit { kApple, kPear, kPlum, kFig };

constexpr EnumTable<Fruit, 3> kFruits(
    "fruit", Domain::kConfig,
    {{{Fruit::kPlum, "plum"}, {Fruit::kApple, "apple"}, {Fruit::kPear, "pear"}}});

TEST(EnumTable, NamesBothWays) {
  for (const auto& e : kFruits.entries()) {
    auto parsed = kFruits.parse(e.name);
    ASSERT_TRUE(parsed.has_value()) << e.name;
    EXPECT_EQ(*parsed, e.value);
    EXPECT_EQ(kFruits.to_string(e.value), e.name);
  }
  static_assert(kFruits.to_string(Fruit::kPear) == "pear");
}

TEST(EnumTable, AValueOutsideTheTableIsAQuestionMark) {
  EXPECT_EQ(kFruits.to_string(Fruit::kFig), "?");
}

TEST(EnumTable, UnknownNameListsTheKnownOnesInTableOrder) {
  auto r = kFruits.parse("fig");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "fruit 'fig': expected plum, apple or pear");
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().domain(), Domain::kConfig);
}

TEST(EnumTable, NamesOfOneAndTwo) {
  constexpr EnumTable<Fruit, 1> one("fruit", Domain::kConfig, {{{Fruit::kFig, "fig"}}});
  EXPECT_EQ(one.names(), "fig");
  constexpr EnumTable<Fruit, 2> two("fruit", Domain::kConfig,
                                    {{{Fruit::kFig, "fig"}, {Fruit::kPear, "pear"}}});
  EXPECT_EQ(two.names(), "fig or pear");
}

TEST(EnumTable, ExactByDefaultOrIgnoringCase) {
  EXPECT_FALSE(kFruits.parse("Plum").has_value());
  constexpr EnumTable<Fruit, 2> any_case("fruit", Domain::kConfig,
                                         {{{Fruit::kFig, "Fig"}, {Fruit::kPear, "pear"}}},
                                         NameCase::kIgnored);
  EXPECT_EQ(any_case.parse("fIG").value(), Fruit::kFig);
  EXPECT_EQ(any_case.parse("PEAR").value(), Fruit::kPear);
  EXPECT_FALSE(any_case.parse("pears").has_value());
  EXPECT_EQ(any_case.to_string(Fruit::kFig), "Fig");
}

TEST(EnumTable, ListingHasALinePerEntryWithItsSummary) {
  constexpr EnumTable<Fruit, 2> summed(
      "fruit", Domain::kConfig,
      {{{Fruit::kFig, "fig", "soft, many seeds"}, {Fruit::kPear, "pear", "a pome"}}});
  EXPECT_EQ(summed.listing(),
            "  fig                soft, many seeds\n"
            "  pear               a pome\n");
}

}  // namespace
}  // namespace tessera::core
