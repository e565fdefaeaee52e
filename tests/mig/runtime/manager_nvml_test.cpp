// The MIG manager on the NVML backend, over the fake libnvidia-ml: real processes, real
// (wall-clock) time, NVML calls that can fail.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/nvml/fake_nvml_env.hpp"
#include "tessera/backends/nvml/nvml_mig_device.hpp"
#include "tessera/mig/runtime/manager.hpp"

namespace tessera::mig {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

workload::BatchJobPtr shell_job(std::string name, std::string script, std::int64_t peak_bytes) {
  auto job = std::make_shared<workload::BatchJob>();
  job->name = std::move(name);
  job->command = {"/bin/sh", "-c", std::move(script)};
  job->estimated_peak_bytes = peak_bytes;
  job->memory.base_bytes = peak_bytes;
  return job;
}

TEST(ManagerOnNvml, EveryJobEndsAndNoInstanceIsLeftWhenACreateFailsMidRun) {
  // The second compute instance the run asks for is refused, as a driver out of resources would.
  test::FakeNvmlEnv env(nlohmann::json{{"fail",
                                        {{{"call", "nvmlGpuInstanceCreateComputeInstance"},
                                          {"nth", 2},
                                          {"ret", cuda::nvml::kErrorInsufficientResources}}}}});
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  cuda::NvmlMigOptions nvml_options;
  nvml_options.sample_period = core::millis(10);
  auto device = cuda::NvmlMigDevice::open(*lib, 0, nvml_options);
  ASSERT_TRUE(device) << device.error().message();

  const std::vector<workload::BatchJobPtr> jobs = {
      shell_job("a", "sleep 0.05", 2 * kGiB),
      shell_job("b", "exit 0", 3 * kGiB),
      shell_job("c", "sleep 0.02", 8 * kGiB),
      shell_job("d", "true", 1 * kGiB),
  };
  ManagerOptions options;
  options.scheme = Scheme::kB;
  auto result = run_jobs(**device, jobs, options);
  ASSERT_TRUE(result) << result.error().message();

  ASSERT_EQ(result->jobs.size(), jobs.size());
  for (const JobOutcome& o : result->jobs) {
    SCOPED_TRACE(o.name);
    EXPECT_TRUE(o.completed || !o.reason.empty());
  }
  EXPECT_EQ(result->completed(), 4);
  // The injected failure happened, and its half-made GPU instance was destroyed.
  const std::string log = env.log_text();
  EXPECT_THAT(log, HasSubstr("nvmlGpuInstanceCreateComputeInstance profileId="));
  EXPECT_THAT(log, HasSubstr("-> 23\nnvmlGpuInstanceDestroy"));
  // Nothing is left on the GPU.
  auto left = (*device)->query_instances();
  ASSERT_TRUE(left) << left.error().message();
  EXPECT_TRUE(left->empty());
  const auto stats = (*device)->stats();
  EXPECT_EQ(stats.instances_created, stats.instances_destroyed);
}

TEST(ManagerOnNvml, AJobThatRunsOutOfMemoryIsRestartedOnALargerInstance) {
  // GPU instance 1 (the first one created) reads nearly full, and the job fails there as a CUDA
  // program out of memory would; anywhere else it succeeds. The fake's MIG UUIDs carry the GPU
  // instance ID in their first group ("MIG-fa4e0001-...").
  test::FakeNvmlEnv env(nlohmann::json{{"memory_used_mib", {{"1", 4800}}}});
  auto lib = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(lib) << lib.error().message();
  cuda::NvmlMigOptions nvml_options;
  nvml_options.sample_period = core::millis(10);
  auto device = cuda::NvmlMigDevice::open(*lib, 0, nvml_options);
  ASSERT_TRUE(device) << device.error().message();

  const std::vector<workload::BatchJobPtr> jobs = {shell_job(
      "grows", "case \"$CUDA_VISIBLE_DEVICES\" in MIG-fa4e0001-*) exit 1;; esac", 2 * kGiB)};
  ManagerOptions options;
  options.scheme = Scheme::kB;
  auto result = run_jobs(**device, jobs, options);
  ASSERT_TRUE(result) << result.error().message();

  ASSERT_EQ(result->jobs.size(), 1u);
  const JobOutcome& o = result->jobs[0];
  EXPECT_TRUE(o.completed) << o.reason;
  ASSERT_EQ(o.attempts.size(), 2u);
  EXPECT_EQ(o.attempts[0].exit, device::JobExitKind::kOutOfMemory);
  EXPECT_EQ(o.attempts[0].profile_id, 19);  // 1g.5gb, 4864 MiB in the fake
  EXPECT_EQ(o.attempts[1].exit, device::JobExitKind::kCompleted);
  EXPECT_EQ(result->oom_restarts, 1);
  auto left = (*device)->query_instances();
  ASSERT_TRUE(left) << left.error().message();
  EXPECT_TRUE(left->empty());
}

}  // namespace
}  // namespace tessera::mig
