#include "tessera/backends/nvml/nvml_gpu_control.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <numeric>
#include <thread>

#include "backends/nvml/fake_nvml_env.hpp"

namespace tessera::cuda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The fake's GPU with MIG off (utilisation is not reported in MIG mode).
nlohmann::json plain_gpu(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json j = {{"mig_mode", 0}, {"mig_pending", 0}};
  j.update(extra);
  return j;
}

std::vector<std::string> calls_named(const test::FakeNvmlEnv& env, std::string_view prefix) {
  std::vector<std::string> out;
  for (const std::string& line : env.log()) {
    if (line.starts_with(prefix)) out.push_back(line);
  }
  return out;
}

TEST(NearestClock, PicksTheClosestSupportedClockAndTheHigherOnATie) {
  const std::vector<int> clocks = {1410, 1395, 1380};
  EXPECT_EQ(nearest_clock_mhz(clocks, 1400), 1395);
  EXPECT_EQ(nearest_clock_mhz(clocks, 1402.5), 1410);  // 7.5 either way
  EXPECT_EQ(nearest_clock_mhz(clocks, 5000), 1410);
  EXPECT_EQ(nearest_clock_mhz(clocks, 1), 1380);
  EXPECT_EQ(nearest_clock_mhz({}, 1000), std::nullopt);
}

TEST(NvmlGpuControl, ReadsTheSupportedClocksHighestFirstWithoutRepeats) {
  test::FakeNvmlEnv env(plain_gpu({{"graphics_clocks", {1200, 1400, 1300, 1400}}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  EXPECT_THAT((*gpu)->supported_clocks_mhz(), ElementsAre(1400, 1300, 1200));
  // The graphics list asked for is the one at the current memory clock.
  EXPECT_THAT(calls_named(env, "nvmlDeviceGetSupportedGraphicsClocks"),
              ElementsAre("nvmlDeviceGetSupportedGraphicsClocks memory=1215 -> 0"));
}

TEST(NvmlGpuControl, ReadsAClockListLongerThanItsFirstBufferAfterNvmlAsksForMore) {
  std::vector<unsigned> many(300);
  std::iota(many.begin(), many.end(), 500u);  // 500..799 MHz
  test::FakeNvmlEnv env(plain_gpu({{"graphics_clocks", many}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  ASSERT_EQ((*gpu)->supported_clocks_mhz().size(), 300u);
  EXPECT_EQ((*gpu)->supported_clocks_mhz().front(), 799);
  EXPECT_EQ((*gpu)->supported_clocks_mhz().back(), 500);
  EXPECT_THAT(calls_named(env, "nvmlDeviceGetSupportedGraphicsClocks"),
              ElementsAre("nvmlDeviceGetSupportedGraphicsClocks memory=1215 -> 7",
                          "nvmlDeviceGetSupportedGraphicsClocks memory=1215 -> 0"));
}

TEST(NvmlGpuControl, TheLockProbeLocksTheWholeRangeAndResetsAtOnce) {
  test::FakeNvmlEnv env(plain_gpu());
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  EXPECT_TRUE((*gpu)->can_lock_clocks());
  EXPECT_TRUE((*gpu)->lock_clocks_status());
  EXPECT_EQ((*gpu)->locked_clock_mhz(), std::nullopt);
  const std::vector<std::string> lock_calls = calls_named(env, "nvmlDevice");
  std::vector<std::string> locks;
  std::copy_if(lock_calls.begin(), lock_calls.end(), std::back_inserter(locks),
               [](const std::string& l) { return l.find("LockedClocks") != std::string::npos; });
  EXPECT_THAT(locks, ElementsAre("nvmlDeviceSetGpuLockedClocks min=210 max=1410 -> 0",
                                 "nvmlDeviceResetGpuLockedClocks -> 0"));
  // Nothing stays locked: the SM clock is the driver's again.
  auto s = (*gpu)->sample();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->sm_clock_mhz, 1410);
}

TEST(NvmlGpuControl, WithoutPermissionClocksCannotBeLockedAndTheReasonSaysWhatToDo) {
  test::FakeNvmlEnv env(plain_gpu({{"clock_permission", false}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  EXPECT_FALSE((*gpu)->can_lock_clocks());
  const core::Status status = (*gpu)->lock_clocks_status();
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code(), core::Code::kFailedPrecondition);
  EXPECT_THAT(status.error().message(), HasSubstr("locked clocks need root"));
  EXPECT_THAT(status.error().message(), HasSubstr("nvidia-smi -lgc"));
  EXPECT_THAT(status.error().message(), HasSubstr("tessera runs at the driver's clocks"));

  auto set = (*gpu)->set_locked_clock_mhz(1000);
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().code(), core::Code::kFailedPrecondition);
  EXPECT_THAT(set.error().message(), HasSubstr("locked clocks need root"));
  // The failed probe is the only lock call; nothing to reset.
  EXPECT_THAT(calls_named(env, "nvmlDeviceSetGpuLockedClocks"),
              ElementsAre("nvmlDeviceSetGpuLockedClocks min=210 max=1410 -> 4"));
  EXPECT_TRUE(calls_named(env, "nvmlDeviceResetGpuLockedClocks").empty());
  // Monitoring still works.
  EXPECT_TRUE((*gpu)->sample());
}

TEST(NvmlGpuControl, AGpuWithoutLockedClocksReportsItUnsupported) {
  test::FakeNvmlEnv env(
      plain_gpu({{"fail", {{{"call", "nvmlDeviceSetGpuLockedClocks"}, {"ret", 3}}}}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  EXPECT_FALSE((*gpu)->can_lock_clocks());
  EXPECT_EQ((*gpu)->lock_clocks_status().error().code(), core::Code::kUnsupported);
  EXPECT_THAT((*gpu)->lock_clocks_status().error().message(),
              HasSubstr("nvmlDeviceSetGpuLockedClocks"));
}

TEST(NvmlGpuControl, AProbeWhoseResetFailsIsReportedAndTheDestructorResetsAgain) {
  test::FakeNvmlEnv env(
      plain_gpu({{"fail", {{{"call", "nvmlDeviceResetGpuLockedClocks"}, {"ret", 999}}}}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  {
    auto gpu = NvmlGpuControl::open(**lib, 0);
    ASSERT_TRUE(gpu) << gpu.error().message();
    EXPECT_FALSE((*gpu)->can_lock_clocks());
    EXPECT_THAT((*gpu)->lock_clocks_status().error().message(), HasSubstr("nvidia-smi -rgc"));
  }
  EXPECT_THAT(
      calls_named(env, "nvmlDeviceResetGpuLockedClocks"),
      ElementsAre("nvmlDeviceResetGpuLockedClocks -> 999", "nvmlDeviceResetGpuLockedClocks -> 0"));
}

TEST(NvmlGpuControl, NoClockListMeansNoLockingWithTheListsError) {
  test::FakeNvmlEnv env(plain_gpu({{"graphics_clocks", nlohmann::json::array()}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  EXPECT_TRUE((*gpu)->supported_clocks_mhz().empty());
  EXPECT_FALSE((*gpu)->can_lock_clocks());
  EXPECT_EQ((*gpu)->lock_clocks_status().error().code(), core::Code::kUnsupported);
  EXPECT_THAT((*gpu)->lock_clocks_status().error().message(), HasSubstr("no graphics clock"));
  EXPECT_TRUE(calls_named(env, "nvmlDeviceSetGpuLockedClocks").empty());
}

TEST(NvmlGpuControl, LocksTheNearestSupportedClockAndResetsIt) {
  test::FakeNvmlEnv env(plain_gpu());
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  env.clear_log();
  auto locked = (*gpu)->set_locked_clock_mhz(1001);  // 1005 and 990 are supported
  ASSERT_TRUE(locked) << locked.error().message();
  EXPECT_EQ(*locked, 1005);
  EXPECT_EQ((*gpu)->locked_clock_mhz(), 1005);
  EXPECT_EQ((*gpu)->sample()->sm_clock_mhz, 1005);
  ASSERT_TRUE((*gpu)->reset_clocks());
  EXPECT_EQ((*gpu)->locked_clock_mhz(), std::nullopt);
  EXPECT_EQ((*gpu)->sample()->sm_clock_mhz, 1410);
  EXPECT_THAT(calls_named(env, "nvmlDeviceSetGpuLockedClocks"),
              ElementsAre("nvmlDeviceSetGpuLockedClocks min=1005 max=1005 -> 0"));
  // A reset with nothing locked asks nothing of NVML.
  env.clear_log();
  EXPECT_TRUE((*gpu)->reset_clocks());
  EXPECT_TRUE(calls_named(env, "nvmlDeviceResetGpuLockedClocks").empty());
}

TEST(NvmlGpuControl, RejectsANonPositiveClock) {
  test::FakeNvmlEnv env(plain_gpu());
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  auto r = (*gpu)->set_locked_clock_mhz(-5);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(r.error().message(), HasSubstr("210-1410 MHz"));
}

TEST(NvmlGpuControl, TheDestructorResetsAClockItLocked) {
  test::FakeNvmlEnv env(plain_gpu());
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  {
    auto gpu = NvmlGpuControl::open(**lib, 0);
    ASSERT_TRUE(gpu) << gpu.error().message();
    ASSERT_TRUE((*gpu)->set_locked_clock_mhz(900));
    env.clear_log();
  }
  EXPECT_THAT(calls_named(env, "nvmlDeviceResetGpuLockedClocks"),
              ElementsAre("nvmlDeviceResetGpuLockedClocks -> 0"));
}

TEST(NvmlGpuControl, SamplesPowerEnergyUtilisationAndTheSmClock) {
  test::FakeNvmlEnv env(plain_gpu({{"power_mw", {310500, 120000}},
                                   {"energy_mj", {5000, 7500}},
                                   {"utilization", {{"gpu", 87}, {"memory", 33}}},
                                   {"sm_clock", 1395}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  auto a = (*gpu)->sample();
  auto b = (*gpu)->sample();
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_DOUBLE_EQ(a->power_watts, 310.5);
  EXPECT_DOUBLE_EQ(b->power_watts, 120.0);
  EXPECT_EQ(a->energy_joules, 5.0);
  EXPECT_EQ(b->energy_joules, 7.5);  // energy per interval: 2.5 J
  EXPECT_EQ(a->gpu_utilization_percent, 87);
  EXPECT_EQ(a->memory_utilization_percent, 33);
  EXPECT_EQ(a->sm_clock_mhz, 1395);
}

TEST(NvmlGpuControl, EnergyAndUtilisationAreAbsentWhereTheDriverLacksThem) {
  // MIG mode on: no utilisation (header text); energy switched off in the fake.
  test::FakeNvmlEnv env({{"mig_mode", 1}, {"energy", false}});
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  auto s = (*gpu)->sample();
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->energy_joules, std::nullopt);
  EXPECT_EQ(s->gpu_utilization_percent, std::nullopt);
  EXPECT_EQ(s->memory_utilization_percent, std::nullopt);
  EXPECT_GT(s->power_watts, 0);
}

TEST(NvmlGpuControl, ASampleWithoutPowerIsAnErrorNamingTheCall) {
  test::FakeNvmlEnv env(plain_gpu({{"power_mw", nlohmann::json::array()}}));
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  auto s = (*gpu)->sample();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), core::Code::kUnsupported);
  EXPECT_THAT(s.error().message(), HasSubstr("nvmlDeviceGetPowerUsage"));
}

TEST(NvmlGpuControl, AnUnknownDeviceIndexIsAnError) {
  test::FakeNvmlEnv env(plain_gpu());
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  auto gpu = NvmlGpuControl::open(**lib, 3);
  ASSERT_FALSE(gpu);
  EXPECT_THAT(gpu.error().message(), HasSubstr("nvmlDeviceGetHandleByIndex_v2(3)"));
}

// On a GPU (scripts/device-check.sh): the real NVML's clocks, power and energy. Prints one line,
// "tessera-device-facts: {json}", that the device check embeds in its report.
TEST(RealGpuNvmlGpuControl, ReadsClocksPowerAndEnergyAndLocksOnlyWithPermission) {
  auto lib = NvmlLibrary::open();
  if (!lib) {
    GTEST_SKIP() << "needs a GPU (" << lib.error().message()
                 << "); scripts/device-check.sh runs this test on one";
  }
  auto gpu = NvmlGpuControl::open(**lib, 0);
  ASSERT_TRUE(gpu) << gpu.error().message();
  NvmlGpuControl& control = **gpu;
  ASSERT_FALSE(control.supported_clocks_mhz().empty())
      << control.lock_clocks_status().error().message();
  auto first = control.sample();
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_GT(first->power_watts, 0);
  EXPECT_GT(first->sm_clock_mhz, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto second = control.sample();
  ASSERT_TRUE(second) << second.error().message();
  if (first->energy_joules && second->energy_joules) {
    EXPECT_GE(*second->energy_joules, *first->energy_joules) << "the counter only grows";
  }

  nlohmann::json facts = {
      {"nvml_library", (*lib)->path()},
      {"supported_clocks_mhz",
       {control.supported_clocks_mhz().back(), control.supported_clocks_mhz().front()}},
      {"supported_clock_count", control.supported_clocks_mhz().size()},
      {"can_lock_clocks", control.can_lock_clocks()},
      {"power_watts", first->power_watts},
      {"sm_clock_mhz", first->sm_clock_mhz},
      {"energy_reported", first->energy_joules.has_value()},
      {"utilization_reported", first->gpu_utilization_percent.has_value()}};
  if (!control.can_lock_clocks()) {
    facts["lock_clocks_reason"] = control.lock_clocks_status().error().message();
  } else {
    const std::vector<int>& clocks = control.supported_clocks_mhz();
    const int middle = clocks[clocks.size() / 2];
    auto locked = control.set_locked_clock_mhz(middle);
    ASSERT_TRUE(locked) << locked.error().message();
    EXPECT_EQ(*locked, middle);
    auto at_lock = control.sample();
    ASSERT_TRUE(at_lock) << at_lock.error().message();
    facts["locked_clock_mhz"] = *locked;
    facts["sm_clock_at_lock_mhz"] = at_lock->sm_clock_mhz;
    ASSERT_TRUE(control.reset_clocks());
  }
  std::cout << "tessera-device-facts: " << facts.dump() << std::endl;
}

}  // namespace
}  // namespace tessera::cuda
