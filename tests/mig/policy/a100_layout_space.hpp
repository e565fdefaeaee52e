#pragma once
// The A100-40GB layout space the MIG policy tests plan in, built once per test suite, and the
// profile IDs they name ([MIG-T6] in src/tessera/hw/mig_profiles.cpp).

#include <gtest/gtest.h>

#include <cstdint>

#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/layout_space.hpp"

namespace tessera::mig::test {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr int k1g5 = 19;
constexpr int k1g10 = 15;
constexpr int k2g10 = 14;
constexpr int k3g20 = 9;
constexpr int k4g20 = 5;
constexpr int k7g40 = 0;

class A100LayoutSpaceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto g = hw::find_mig_geometry("a100-40gb");
    ASSERT_TRUE(g) << g.error().message();
    auto space = LayoutSpace::build(*g);
    ASSERT_TRUE(space) << space.error().message();
    space_ = new LayoutSpace(std::move(*space));
  }
  static void TearDownTestSuite() {
    delete space_;
    space_ = nullptr;
  }

  static inline LayoutSpace* space_ = nullptr;
};

}  // namespace tessera::mig::test
