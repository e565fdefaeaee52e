#include "tessera/core/error.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tessera::core {
namespace {

TEST(Error, KeepsDomainCodeAndMessage) {
  Error e(Domain::kWorkload, Code::kNotFound, "no model 'llama-9'");
  EXPECT_EQ(e.domain(), Domain::kWorkload);
  EXPECT_EQ(e.code(), Code::kNotFound);
  EXPECT_EQ(e.message(), "no model 'llama-9'");
}

TEST(Error, WithContextPrefixesAndKeepsTheRest) {
  Error e(Domain::kConfig, Code::kParse, "bad duration");
  Error outer = e.with_context("while loading demo.yaml");
  EXPECT_EQ(outer.message(), "while loading demo.yaml: bad duration");
  EXPECT_EQ(outer.domain(), Domain::kConfig);
  EXPECT_EQ(outer.code(), Code::kParse);
  // The original is unchanged: with_context returns a new error.
  EXPECT_EQ(e.message(), "bad duration");
  EXPECT_EQ(outer.with_context("tessera").message(),
            "tessera: while loading demo.yaml: bad duration");
}

TEST(Error, FormatsAsItsMessage) {
  Error e(Domain::kSim, Code::kInternal, "queue empty");
  EXPECT_EQ(fmt::format("{}", e), "queue empty");
  EXPECT_EQ(fmt::format("[{:>12}]", e), "[ queue empty]");
}

TEST(Error, DomainNamesAreDistinct) {
  const Domain all[] = {Domain::kCore,     Domain::kConfig,   Domain::kHardware,
                        Domain::kWorkload, Domain::kDevice,   Domain::kSim,
                        Domain::kGpu,      Domain::kScenario, Domain::kIo};
  std::set<std::string_view> names;
  for (Domain d : all) {
    EXPECT_NE(to_string(d), "unknown");
    EXPECT_FALSE(to_string(d).empty());
    names.insert(to_string(d));
  }
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(to_string(Domain::kConfig), "config");
  EXPECT_EQ(to_string(Domain::kHardware), "hardware");
}

TEST(Error, CodeNamesAreDistinct) {
  const Code all[] = {Code::kInvalidArgument, Code::kNotFound,          Code::kParse,
                      Code::kUnsupported,     Code::kResourceExhausted, Code::kFailedPrecondition,
                      Code::kInternal};
  std::set<std::string_view> names;
  for (Code c : all) {
    EXPECT_NE(to_string(c), "unknown");
    names.insert(to_string(c));
  }
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(to_string(Code::kParse), "parse error");
  EXPECT_EQ(to_string(Code::kNotFound), "not found");
}

Result<int> half(int x) {
  if (x % 2 != 0) return failf(Domain::kCore, Code::kInvalidArgument, "{} is odd", x);
  return x / 2;
}

Status check_positive(int x) {
  if (x <= 0) return fail(Domain::kCore, Code::kInvalidArgument, "must be positive");
  return {};
}

TEST(Result, CarriesValueOrError) {
  auto ok = half(8);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 4);

  auto bad = half(7);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "7 is odd");
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
}

TEST(Result, StatusIsVoidOnSuccess) {
  EXPECT_TRUE(check_positive(1).has_value());
  auto s = check_positive(0);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(), "must be positive");
  EXPECT_EQ(s.error().domain(), Domain::kCore);
}

}  // namespace
}  // namespace tessera::core
