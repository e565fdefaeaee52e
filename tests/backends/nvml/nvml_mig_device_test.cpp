#include "tessera/backends/nvml/nvml_mig_device.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/nvml/fake_nvml_env.hpp"
#include "tessera/core/process_table.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr int k3g = 9;   // 3g.20gb: NVML_GPU_INSTANCE_PROFILE_3_SLICE (index 2), 4 memory slices
constexpr int k4g = 5;   // 4g.20gb
constexpr int k1g = 19;  // 1g.5gb
constexpr std::int64_t kMiB = 1024 * 1024;

class Recorder final : public device::MigJobObserver {
 public:
  void on_sample(const device::JobSample& s) override { samples.push_back(s); }
  void on_exit(const device::JobExit& e) override { exits.push_back(e); }
  std::vector<device::JobSample> samples;
  std::vector<device::JobExit> exits;
};

workload::BatchJobPtr shell_job(std::string name, std::string script) {
  auto job = std::make_shared<workload::BatchJob>();
  job->name = std::move(name);
  job->command = {"/bin/sh", "-c", std::move(script)};
  return job;
}

struct Opened {
  std::shared_ptr<NvmlLibrary> library;
  std::unique_ptr<NvmlMigDevice> device;
};

core::Result<Opened> open_fake(NvmlMigOptions options = {}) {
  TESSERA_ASSIGN_OR_RETURN(auto lib, test::FakeNvmlEnv::open_library());
  TESSERA_ASSIGN_OR_RETURN(auto dev, NvmlMigDevice::open(lib, 0, std::move(options)));
  return Opened{lib, std::move(dev)};
}

// Runs the device until `recorder` has seen `exits` exits.
void run_until_exits(device::MigDevice& d, const Recorder& recorder, std::size_t exits) {
  ASSERT_TRUE(d.run([&] { return recorder.exits.size() >= exits; }));
  ASSERT_EQ(recorder.exits.size(), exits);
}

TEST(NvmlMigDevice, MigModeOffIsAnErrorThatSaysHowToEnableIt) {
  test::FakeNvmlEnv env(nlohmann::json{{"mig_mode", 0}});
  auto d = open_fake();
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code(), core::Code::kFailedPrecondition);
  EXPECT_THAT(d.error().message(), HasSubstr("sudo nvidia-smi -i 0 -mig 1"));
}

TEST(NvmlMigDevice, MigModePendingAsksForAReset) {
  test::FakeNvmlEnv env(nlohmann::json{{"mig_mode", 0}, {"mig_pending", 1}});
  auto d = open_fake();
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message(), HasSubstr("reset the GPU"));
}

TEST(NvmlMigDevice, OpensTheCatalogGeometryOfTheBoardNvmlNames) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->device->geometry().gpu, "A100-SXM4-40GB");
  const auto caps = d->device->capabilities();
  EXPECT_TRUE(caps.reconfigure);
  EXPECT_TRUE(caps.memory_samples);
  EXPECT_TRUE(caps.energy);
  EXPECT_TRUE(d->device->instances().empty());
}

TEST(NvmlMigDevice, AnUnknownBoardIsAnError) {
  test::FakeNvmlEnv env(nlohmann::json{{"gpu_name", "NVIDIA Tesla V100-SXM2-16GB"}});
  auto d = open_fake();
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message(), HasSubstr("Tesla V100-SXM2-16GB"));
}

TEST(NvmlMigDevice, ProfilesThatDifferFromTheCatalogAreReported) {
  // The real A100-40GB table with 3g.20gb's ID changed.
  nlohmann::json profiles = nlohmann::json::array();
  const std::vector<std::tuple<std::string, int, int, int, int, int, std::vector<int>>> rows = {
      {"1g.5gb", 0, 19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}},
      {"1g.5gb+me", 7, 20, 1, 1, 1, {0}},
      {"1g.10gb", 9, 15, 1, 2, 4, {0, 2, 4, 6}},
      {"2g.10gb", 1, 14, 2, 2, 3, {0, 2, 4}},
      {"3g.20gb", 2, 10, 3, 4, 2, {0, 4}},
      {"4g.20gb", 3, 5, 4, 4, 1, {0}},
      {"7g.40gb", 4, 0, 7, 8, 1, {0}}};
  for (const auto& [name, index, id, slices, mem, count, starts] : rows) {
    profiles.push_back({{"name", name},
                        {"index", index},
                        {"id", id},
                        {"slices", slices},
                        {"memory_slices", mem},
                        {"instances", count},
                        {"placements", starts}});
  }
  test::FakeNvmlEnv env(nlohmann::json{{"profiles", profiles}});
  auto d = open_fake();
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message(),
              HasSubstr("3g.20gb: the catalog has ID 9 with 3 compute slices, NVML index 2 "
                        "reports ID 10 with 3"));
  EXPECT_THAT(d.error().message(), Not(HasSubstr("4g.20gb")));
}

TEST(NvmlMigDevice, CreateLooksUpTheProfileByIndexAndCreatesWithItsId) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  env.clear_log();
  auto inst = d->device->create_instance(k3g, 4);
  ASSERT_TRUE(inst) << inst.error().message();
  const std::string log = env.log_text();
  EXPECT_THAT(log, HasSubstr("nvmlDeviceGetGpuInstanceProfileInfo profile=2 -> 0"));
  EXPECT_THAT(log, HasSubstr("nvmlDeviceCreateGpuInstanceWithPlacement profileId=9 start=4 "
                             "size=4 -> 0"));
  EXPECT_THAT(log, HasSubstr("nvmlGpuInstanceCreateComputeInstance profileId=2 -> 0"));
  EXPECT_THAT(inst->uuid, StartsWith("MIG-"));
  EXPECT_EQ(inst->profile_id, k3g);
  EXPECT_EQ(inst->start, 4);
  EXPECT_EQ(inst->memory_bytes, 20 * 1024 * kMiB);
  EXPECT_EQ(inst->sms, 42);

  const auto all = d->device->instances();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, inst->id);
  EXPECT_EQ(all[0].uuid, inst->uuid);
  EXPECT_EQ(d->device->stats().instances_created, 1);
}

TEST(NvmlMigDevice, OverlappingPlacementsAreRefusedBeforeAndByTheDriver) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  ASSERT_TRUE(d->device->create_instance(k3g, 0));
  // tessera's own placement check refuses it first...
  auto overlap = d->device->create_instance(k4g, 0);
  ASSERT_FALSE(overlap);
  EXPECT_THAT(overlap.error().message(), HasSubstr("cannot create 4g.20gb at memory slice 0"));
  // ...and the fake driver refuses it like the real one.
  const NvmlApi& api = d->library->api();
  nvml::Device dev = nullptr;
  ASSERT_EQ(api.device_get_handle_by_index(0, &dev), nvml::kSuccess);
  const nvml::GpuInstancePlacement at0{0, 4};
  nvml::GpuInstance gi = nullptr;
  EXPECT_EQ(api.device_create_gpu_instance_with_placement(dev, k4g, &at0, &gi),
            nvml::kErrorInsufficientResources);
  const nvml::GpuInstancePlacement bad_start{1, 4};
  EXPECT_EQ(api.device_create_gpu_instance_with_placement(dev, k3g, &bad_start, &gi),
            nvml::kErrorInvalidArgument);
  EXPECT_EQ(d->device->instances().size(), 1u);
}

TEST(NvmlMigDevice, AComputeInstanceFailureDestroysTheGpuInstance) {
  test::FakeNvmlEnv env(nlohmann::json{{"fail",
                                        {{{"call", "nvmlGpuInstanceCreateComputeInstance"},
                                          {"nth", 1},
                                          {"ret", nvml::kErrorInsufficientResources}}}}});
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k3g, 0);
  ASSERT_FALSE(inst);
  EXPECT_EQ(inst.error().code(), core::Code::kResourceExhausted);
  EXPECT_THAT(inst.error().message(), HasSubstr("nvmlGpuInstanceCreateComputeInstance"));
  EXPECT_THAT(inst.error().message(), HasSubstr("was destroyed"));
  EXPECT_TRUE(d->device->instances().empty());
  EXPECT_THAT(env.log_text(), HasSubstr("nvmlGpuInstanceDestroy id=1 -> 0"));
  EXPECT_EQ(d->device->stats().instances_created, 0);
}

TEST(NvmlMigDevice, AFailedCleanupNamesTheInstanceLeftBehind) {
  test::FakeNvmlEnv env(nlohmann::json{
      {"fail",
       {{{"call", "nvmlDeviceGetUUID"}, {"nth", 1}, {"ret", nvml::kErrorUnknown}},
        {{"call", "nvmlGpuInstanceDestroy"}, {"nth", 1}, {"ret", nvml::kErrorInUse}}}}});
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 3);
  ASSERT_FALSE(inst);
  EXPECT_THAT(inst.error().message(), HasSubstr("nvmlDeviceGetUUID"));
  EXPECT_THAT(inst.error().message(), HasSubstr("GPU instance 1 (1g.5gb at memory slice 3) is "
                                                "left on GPU 0"));
  EXPECT_THAT(inst.error().message(), HasSubstr("sudo nvidia-smi mig -i 0 -dgi -gi 1"));
  // The compute instance was destroyed before the GPU instance's destroy failed.
  EXPECT_THAT(env.log_text(), HasSubstr("nvmlComputeInstanceDestroy -> 0"));
}

// Every NVML call create_instance makes, failed in turn, leaves no instance behind.
TEST(NvmlMigDevice, AFailureAtAnyCallOfCreateLeavesNothingBehind) {
  std::vector<std::pair<std::string, int>> calls;  // (name, nth since init)
  {
    test::FakeNvmlEnv env;
    auto d = open_fake();
    ASSERT_TRUE(d) << d.error().message();
    const std::size_t before = env.log().size();
    ASSERT_TRUE(d->device->create_instance(k3g, 4));
    const auto log = env.log();
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < log.size(); ++i) {
      const std::string name = log[i].substr(0, log[i].find(' '));
      const int nth = ++seen[name];
      if (i >= before) calls.emplace_back(name, nth);
    }
  }
  ASSERT_GE(calls.size(), 8u);
  for (const auto& [name, nth] : calls) {
    SCOPED_TRACE(name + " #" + std::to_string(nth));
    test::FakeNvmlEnv env(
        nlohmann::json{{"fail", {{{"call", name}, {"nth", nth}, {"ret", nvml::kErrorUnknown}}}}});
    auto d = open_fake();
    ASSERT_TRUE(d) << d.error().message();
    auto inst = d->device->create_instance(k3g, 4);
    ASSERT_FALSE(inst);
    EXPECT_THAT(inst.error().message(), HasSubstr(name));
    EXPECT_THAT(inst.error().message(), Not(HasSubstr("left on GPU")));
    auto left = d->device->query_instances();
    ASSERT_TRUE(left) << left.error().message();
    EXPECT_TRUE(left->empty());
    // And the GPU is usable again: the same create now succeeds.
    EXPECT_TRUE(d->device->create_instance(k3g, 4));
  }
}

TEST(NvmlMigDevice, DestroyIsRefusedWhileAJobRunsThenRemovesComputeAndGpuInstance) {
  test::FakeNvmlEnv env;
  NvmlMigOptions options;
  options.kill_grace = core::seconds(5);
  auto d = open_fake(options);
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k3g, 0);
  ASSERT_TRUE(inst) << inst.error().message();
  Recorder rec;
  auto run = d->device->start_job(inst->id, shell_job("sleeper", "exec sleep 30"), rec);
  ASSERT_TRUE(run) << run.error().message();

  auto refused = d->device->destroy_instance(inst->id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), core::Code::kFailedPrecondition);
  EXPECT_THAT(refused.error().message(), HasSubstr("job 'sleeper'"));

  ASSERT_TRUE(d->device->stop_job(*run));
  run_until_exits(*d->device, rec, 1);
  EXPECT_EQ(rec.exits[0].kind, device::JobExitKind::kKilled);

  env.clear_log();
  ASSERT_TRUE(d->device->destroy_instance(inst->id));
  const std::string log = env.log_text();
  const auto ci = log.find("nvmlComputeInstanceDestroy");
  const auto gi = log.find("nvmlGpuInstanceDestroy id=1 -> 0");
  ASSERT_NE(ci, std::string::npos);
  ASSERT_NE(gi, std::string::npos);
  EXPECT_LT(ci, gi);
  EXPECT_TRUE(d->device->instances().empty());
  EXPECT_EQ(d->device->stats().instances_destroyed, 1);
}

// What a restart needs to find a job again (mig::recover): its process group and start time,
// while it runs; nothing once it has ended.
TEST(NvmlMigDevice, ARunningJobNamesItsProcessGroupAndStartTime) {
  test::FakeNvmlEnv env;
  NvmlMigOptions options;
  options.kill_grace = core::millis(100);
  auto d = open_fake(options);
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 0);
  ASSERT_TRUE(inst) << inst.error().message();
  Recorder rec;
  auto run = d->device->start_job(inst->id, shell_job("sleeper", "exec sleep 30"), rec);
  ASSERT_TRUE(run) << run.error().message();
  const auto process = d->device->job_process(*run);
  ASSERT_TRUE(process.has_value());
  const auto info = core::read_process(static_cast<pid_t>(process->process_group));
  ASSERT_TRUE(info) << info.error().message();
  EXPECT_EQ(info->process_group, process->process_group);  // a group of its own
  EXPECT_EQ(info->start_ticks, process->start_ticks);
  ASSERT_TRUE(d->device->stop_job(*run));
  run_until_exits(*d->device, rec, 1);
  EXPECT_FALSE(d->device->job_process(*run).has_value());
}

// A job that has exited 0 by the time a stop reaches it completed: the stop came too late to
// matter, and a manager stopping for a signal must not run it again.
TEST(NvmlMigDevice, AJobThatEndedBeforeItsStopCompleted) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 0);
  ASSERT_TRUE(inst) << inst.error().message();
  Recorder rec;
  auto run = d->device->start_job(inst->id, shell_job("done", "exit 0"), rec);
  ASSERT_TRUE(run) << run.error().message();
  // Until the loop reaps it, the ended job is still the device's run.
  for (int i = 0;
       i < 200 &&
       core::read_process(static_cast<pid_t>(d->device->job_process(*run)->process_group))->state !=
           'Z';
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(d->device->stop_job(*run));
  run_until_exits(*d->device, rec, 1);
  EXPECT_EQ(rec.exits[0].kind, device::JobExitKind::kCompleted) << rec.exits[0].message;
}

TEST(NvmlMigDevice, AJobSeesItsInstancesMigUuid) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 2);
  ASSERT_TRUE(inst) << inst.error().message();
  const std::string out = (env.dir() / "visible.txt").string();
  Recorder rec;
  ASSERT_TRUE(d->device->start_job(
      inst->id, shell_job("env", "echo \"$CUDA_VISIBLE_DEVICES\" > '" + out + "'"), rec));
  run_until_exits(*d->device, rec, 1);
  EXPECT_EQ(rec.exits[0].kind, device::JobExitKind::kCompleted) << rec.exits[0].message;
  std::ifstream in(out);
  std::string seen;
  std::getline(in, seen);
  EXPECT_EQ(seen, inst->uuid);
}

TEST(NvmlMigDevice, ExitStatusAndMemoryDecideHowAJobEnded) {
  // GPU instance 1 (the first created) reads 19900 of its 19968 MiB in use.
  test::FakeNvmlEnv env(nlohmann::json{{"memory_used_mib", {{"1", 19900}}}});
  NvmlMigOptions options;
  options.sample_period = core::millis(10);
  auto d = open_fake(options);
  ASSERT_TRUE(d) << d.error().message();
  auto full = d->device->create_instance(k3g, 0);   // GPU instance 1: nearly full
  auto empty = d->device->create_instance(k3g, 4);  // GPU instance 2: nothing in use
  ASSERT_TRUE(full && empty);
  ASSERT_EQ(full->id, 1u);

  Recorder rec;
  ASSERT_TRUE(d->device->start_job(full->id, shell_job("oom", "exit 1"), rec));
  ASSERT_TRUE(d->device->start_job(empty->id, shell_job("bug", "exit 3"), rec));
  run_until_exits(*d->device, rec, 2);
  std::map<device::JobRunId, device::JobExit> by_run;
  for (const auto& e : rec.exits) by_run[e.run] = e;
  EXPECT_EQ(by_run[1].kind, device::JobExitKind::kOutOfMemory) << by_run[1].message;
  EXPECT_EQ(by_run[1].peak_reserved_bytes, 19900 * kMiB);
  EXPECT_THAT(by_run[1].message, HasSubstr("19900 MiB of the instance's 19968 MiB"));
  EXPECT_EQ(by_run[2].kind, device::JobExitKind::kFailed);
  EXPECT_EQ(by_run[2].message, "exit status 3");
  // Every job was sampled at least once, with requested = reserved = used.
  ASSERT_FALSE(rec.samples.empty());
  for (const auto& s : rec.samples) {
    EXPECT_EQ(s.requested_bytes, s.reserved_bytes);
    EXPECT_GE(s.iteration, 1);
  }

  // The same memory with a clean exit is a completed job.
  rec = {};
  ASSERT_TRUE(d->device->start_job(full->id, shell_job("ok", "exit 0"), rec));
  run_until_exits(*d->device, rec, 1);
  EXPECT_EQ(rec.exits[0].kind, device::JobExitKind::kCompleted);
  EXPECT_GE(rec.exits[0].iterations_done, 1);
}

TEST(NvmlMigDevice, StopJobEndsASleepingJobAndKillsOneThatIgnoresTerm) {
  test::FakeNvmlEnv env;
  NvmlMigOptions options;
  options.kill_grace = core::millis(100);
  auto d = open_fake(options);
  ASSERT_TRUE(d) << d.error().message();
  auto a = d->device->create_instance(k1g, 0);
  auto b = d->device->create_instance(k1g, 1);
  ASSERT_TRUE(a && b);
  Recorder rec;
  const std::string ready = (env.dir() / "ready").string();
  auto polite = d->device->start_job(a->id, shell_job("polite", "sleep 30"), rec);
  // Two sleeps keep the shell itself running (a last command may be exec'd in its place), so the
  // process tessera signals is the one that ignores SIGTERM.
  auto deaf = d->device->start_job(
      b->id, shell_job("deaf", "trap '' TERM; touch '" + ready + "'; sleep 30; sleep 30"), rec);
  ASSERT_TRUE(polite && deaf);
  // Stop the deaf job only once it ignores SIGTERM.
  ASSERT_TRUE(d->device->run([&] { return std::filesystem::exists(ready); }));
  ASSERT_TRUE(std::filesystem::exists(ready));
  ASSERT_TRUE(d->device->stop_job(*polite));
  ASSERT_TRUE(d->device->stop_job(*deaf));
  run_until_exits(*d->device, rec, 2);
  for (const auto& e : rec.exits) {
    EXPECT_EQ(e.kind, device::JobExitKind::kKilled) << e.message;
  }
  std::map<device::JobRunId, std::string> messages;
  for (const auto& e : rec.exits) messages[e.run] = e.message;
  EXPECT_THAT(messages[*deaf], HasSubstr("signal 9"));
  // Stopping a finished run is a no-op; an unknown one is an error.
  EXPECT_TRUE(d->device->stop_job(*polite));
  EXPECT_FALSE(d->device->stop_job(999));
}

TEST(NvmlMigDevice, AJobGetsSigtermEvenWhenThisProcessBlocksIt) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 0);
  ASSERT_TRUE(inst);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  Recorder rec;
  auto run = d->device->start_job(inst->id, shell_job("sleeper", "exec sleep 30"), rec);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_TRUE(d->device->stop_job(*run));
  run_until_exits(*d->device, rec, 1);
  EXPECT_EQ(rec.exits[0].kind, device::JobExitKind::kKilled);
  EXPECT_THAT(rec.exits[0].message, HasSubstr("signal 15"));  // SIGTERM did it, not SIGKILL
}

TEST(NvmlMigDevice, AJobReapedElsewhereStillEnds) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 0);
  ASSERT_TRUE(inst);
  // With SIGCHLD ignored the kernel reaps children itself, and their status is lost.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &old), 0);
  Recorder rec;
  auto run = d->device->start_job(inst->id, shell_job("orphan", "exit 0"), rec);
  ASSERT_TRUE(run) << run.error().message();
  run_until_exits(*d->device, rec, 1);
  ASSERT_EQ(sigaction(SIGCHLD, &old, nullptr), 0);
  EXPECT_EQ(rec.exits[0].kind, device::JobExitKind::kFailed);
  EXPECT_THAT(rec.exits[0].message, HasSubstr("reaped elsewhere"));
  EXPECT_TRUE(d->device->destroy_instance(inst->id));  // the instance is idle again
}

TEST(NvmlMigDevice, StartJobRefusesWhatCannotRun) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  auto inst = d->device->create_instance(k1g, 0);
  ASSERT_TRUE(inst);
  Recorder rec;
  auto job = std::make_shared<workload::BatchJob>();
  job->name = "no-command";
  auto empty = d->device->start_job(inst->id, job, rec);
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message(), HasSubstr("job 'no-command' has no command"));

  auto missing = d->device->start_job(inst->id, shell_job("x", "true"),
                                      rec);  // fine: shows the instance is usable
  ASSERT_TRUE(missing);
  auto busy = d->device->start_job(inst->id, shell_job("y", "true"), rec);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code(), core::Code::kFailedPrecondition);
  run_until_exits(*d->device, rec, 1);

  auto nowhere = d->device->start_job(77, shell_job("z", "true"), rec);
  ASSERT_FALSE(nowhere);
  EXPECT_EQ(nowhere.error().code(), core::Code::kNotFound);

  auto bad_binary = std::make_shared<workload::BatchJob>();
  bad_binary->name = "ghost";
  bad_binary->command = {"/nonexistent/tessera-job"};
  auto spawn = d->device->start_job(inst->id, bad_binary, rec);
  ASSERT_FALSE(spawn);
  EXPECT_THAT(spawn.error().message(), HasSubstr("job 'ghost'"));
}

TEST(NvmlMigDevice, EnergyIsTheCountersDifferenceSinceOpen) {
  test::FakeNvmlEnv env;  // the fake's counter gains 1000 mJ per read
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_DOUBLE_EQ(d->device->stats().energy_joules, 1.0);
  EXPECT_DOUBLE_EQ(d->device->stats().energy_joules, 2.0);
}

TEST(NvmlMigDevice, NoEnergyCapabilityWhereTheDriverHasNoCounter) {
  test::FakeNvmlEnv env(nlohmann::json{{"energy", false}});
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_FALSE(d->device->capabilities().energy);
  EXPECT_EQ(d->device->stats().energy_joules, 0.0);
}

TEST(NvmlMigDevice, InstancesIncludeOnesTesseraDidNotCreate) {
  test::FakeNvmlEnv env;
  auto d = open_fake();
  ASSERT_TRUE(d) << d.error().message();
  // Another tool makes a 2g.10gb instance without a compute instance.
  const NvmlApi& api = d->library->api();
  nvml::Device dev = nullptr;
  ASSERT_EQ(api.device_get_handle_by_index(0, &dev), nvml::kSuccess);
  const nvml::GpuInstancePlacement at2{2, 2};
  nvml::GpuInstance gi = nullptr;
  ASSERT_EQ(api.device_create_gpu_instance_with_placement(dev, 14, &at2, &gi), nvml::kSuccess);
  ASSERT_TRUE(d->device->create_instance(k1g, 0));

  const auto all = d->device->instances();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].profile_id, 14);
  EXPECT_EQ(all[1].start, 2);
  EXPECT_TRUE(all[1].uuid.empty());
  Recorder rec;
  auto refused = d->device->start_job(all[1].id, shell_job("x", "true"), rec);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message(), HasSubstr("no compute instance"));
  // tessera can still remove it.
  ASSERT_TRUE(d->device->destroy_instance(all[1].id));
  EXPECT_EQ(d->device->instances().size(), 1u);
}

}  // namespace
}  // namespace tessera::cuda
