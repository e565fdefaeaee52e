// The interposer under programs, as LD_PRELOAD: the driver-API program (driver_app.cpp) against
// the fake libcuda, and the CUDA runtime program (runtime_app.cu) on a real GPU.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../../dra/claim_fixtures.hpp"
#include "../../dra/fake_driver_parts.hpp"
#include "support/cuda_test_env.hpp"
#include "tessera/daemon/control_client.hpp"
#include "tessera/daemon/control_server.hpp"
#include "tessera/dra/daemon_grants.hpp"
#include "tessera/dra/dra_driver.hpp"
#include "tessera/hw/gpu_spec.hpp"

extern char** environ;

namespace {

using nlohmann::json;

struct Outcome {
  int status = -1;  // exit code, or -1 when it did not exit normally
  std::string output;
  json fake_log;  // FAKE_CUDA_LOG
  json summary;   // TESSERA_INTERPOSE_LOG
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json read_json(const std::string& path) {
  const std::string text = read_file(path);
  return text.empty() ? json() : json::parse(text, nullptr, false);
}

// A program started with start() and not yet waited for.
struct Running {
  pid_t pid = -1;
  std::string fake_log;
  std::string summary;
  std::string output;
};

// Starts `program args...` with the environment plus `env` (a value of "" removes the variable).
Running start(const std::string& program, std::vector<std::string> args,
              std::map<std::string, std::string> env) {
  static int counter = 0;
  const std::string dir = ::testing::TempDir() + "interpose_" + std::to_string(getpid()) + "_" +
                          std::to_string(++counter);
  Running r{-1, dir + "_fake.json", dir + "_summary.json", dir + "_output.txt"};
  // A file left by an earlier process that had the same pid would read as this run's.
  for (const std::string* path : {&r.fake_log, &r.summary, &r.output}) std::remove(path->c_str());
  env.emplace("FAKE_CUDA_LOG", r.fake_log);
  env.emplace("TESSERA_INTERPOSE_LOG", r.summary);
  for (const char* key :
       {"TESSERA_PARTITION_SMS", "TESSERA_TENANT", "LD_PRELOAD", "FAKE_CUDA_SCRIPT",
        "TESSERA_INTERPOSE_VERBOSE", "TESSERA_DAEMON_SOCKET", "TESSERA_CLASS", "TESSERA_PRIORITY",
        "TESSERA_SM_SHARE", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}) {
    env.emplace(key, "");
  }
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!env.contains(entry.substr(0, entry.find('=')))) entries.push_back(entry);
  }
  for (const auto& [key, value] : env) {
    if (!value.empty()) entries.push_back(key + "=" + value);
  }
  std::vector<char*> envp;
  for (auto& entry : entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string program_copy = program;
  std::vector<char*> argv{program_copy.data()};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, r.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (posix_spawn(&r.pid, program.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) {
    r.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  return r;
}

// Waits for it and reads what it left.
Outcome finish(const Running& running) {
  Outcome r;
  if (running.pid > 0) {
    int status = 0;
    waitpid(running.pid, &status, 0);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  r.output = read_file(running.output);
  r.fake_log = read_json(running.fake_log);
  r.summary = read_json(running.summary);
  return r;
}

Running start(const std::string& program, const std::string& arg,
              std::map<std::string, std::string> env) {
  return start(program, std::vector<std::string>{arg}, std::move(env));
}

Outcome run(const std::string& program, const std::string& arg,
            std::map<std::string, std::string> env) {
  return finish(start(program, arg, std::move(env)));
}

// In a sanitizer build the interposer is instrumented too, and it hooks dlsym, which the
// sanitizer's runtime calls while it initializes, before instrumented code can run: every program
// under the interposer would crash at start. The uninstrumented build (./run.sh test) runs them.
class Interpose : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef TESSERA_SANITIZED
    GTEST_SKIP() << "not in a sanitizer build: the interposer's dlsym hook is called by the "
                    "sanitizer's runtime before that runtime is initialized";
#endif
  }
};
using RealGpuInterpose = Interpose;

std::map<std::string, std::string> fake_env(const json& script) {
  return {{"LD_LIBRARY_PATH", TESSERA_FAKE_CUDA_DIR}, {"FAKE_CUDA_SCRIPT", script.dump()}};
}

Outcome run_driver_app(std::map<std::string, std::string> env, bool preload = true,
                       const json& script = json{{"schedule", "reverse"}}) {
  auto all = fake_env(script);
  all.merge(env);
  if (preload) all["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  return run(TESSERA_INTERPOSE_DRIVER_APP, "launches", all);
}

// The executed launches (kernels and graphs) of the fake's log, in execution order.
std::vector<json> launches(const json& log) {
  std::vector<json> out;
  for (const json& op : log.at("ops")) {
    if (op.at("op") == "launch" || op.at("op") == "graph_launch") out.push_back(op);
  }
  return out;
}

std::string name_of(const json& launch) {
  return launch.at("op") == "graph_launch" ? "graph" : launch.at("kernel").get<std::string>();
}

// The op executed whose enqueue id is `enqueue`.
const json* by_enqueue(const json& log, std::uint64_t enqueue) {
  for (const json& op : log.at("ops")) {
    if (op.at("enqueue") == enqueue) return &op;
  }
  return nullptr;
}

const json& entry(const Outcome& r, const char* symbol) {
  return r.summary.at("entry_points").at(symbol);
}

const std::vector<std::string> kOrder = {"app_step",     "app_ptsz", "app_ex", "app_ex_ptsz",
                                         "app_coop_big", "app_coop", "graph"};

TEST_F(Interpose, RoutesEveryLaunchOntoThePartitionStreamInTheApplicationsOrder) {
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "16"}, {"TESSERA_TENANT", "infer"}});
  ASSERT_EQ(r.status, 0) << r.output;
  const json& log = r.fake_log;
  ASSERT_TRUE(log.is_object()) << r.output;
  ASSERT_EQ(log.at("green_contexts").size(), 1u) << log.at("green_contexts").dump();

  const std::vector<json> ls = launches(log);
  std::vector<std::string> names;
  for (const json& l : ls) names.push_back(name_of(l));
  ASSERT_EQ(names, kOrder);
  const json& first_routed = ls.at(0);
  const auto partition_stream = first_routed.at("stream").get<std::uint64_t>();
  EXPECT_NE(first_routed.at("green_ctx"), 0);
  const auto& ops = log.at("ops");
  std::uint64_t app_stream = 0;
  for (const json& l : ls) {
    if (name_of(l) == "app_coop_big") {
      // Too large for 16 SMs: left on the application's stream.
      EXPECT_EQ(l.at("green_ctx"), 0);
      EXPECT_NE(l.at("stream"), partition_stream);
      continue;
    }
    SCOPED_TRACE(name_of(l));
    EXPECT_EQ(l.at("stream"), partition_stream);
    EXPECT_NE(l.at("green_ctx"), 0);
    if (l.at("op") == "launch") {
      EXPECT_EQ(l.at("sms"), 16);
    }
    // Just before it on P: a wait for an event recorded on the application's stream; just after
    // it on P: a record that the application's stream waits for.
    const auto seq = l.at("seq").get<std::size_t>();
    const json* before = nullptr;
    const json* after = nullptr;
    for (std::size_t i = seq; i-- > 0;) {
      if (ops[i].at("stream") == partition_stream) {
        before = &ops[i];
        break;
      }
    }
    for (std::size_t i = seq + 1; i < ops.size(); ++i) {
      if (ops[i].at("stream") == partition_stream) {
        after = &ops[i];
        break;
      }
    }
    ASSERT_NE(before, nullptr);
    ASSERT_NE(after, nullptr);
    EXPECT_EQ(before->at("op"), "wait");
    ASSERT_FALSE(before->at("record").is_null());
    const json* app_record = by_enqueue(log, before->at("record").get<std::uint64_t>());
    ASSERT_NE(app_record, nullptr);
    EXPECT_EQ(app_record->at("op"), "event_record");
    EXPECT_NE(app_record->at("stream"), partition_stream);
    EXPECT_EQ(app_record->at("green_ctx"), 0);
    EXPECT_EQ(after->at("op"), "event_record");
    bool app_waits = false;
    for (const json& op : ops) {
      if (op.at("op") == "wait" && op.at("record") == after->at("enqueue")) {
        app_waits = op.at("stream") == app_record->at("stream");
        EXPECT_GT(op.at("seq").get<std::size_t>(), seq);
      }
    }
    EXPECT_TRUE(app_waits);
    if (name_of(l) == "app_step") app_stream = app_record->at("stream").get<std::uint64_t>();
  }
  // Under the "reverse" schedule (newest stream first) the partition stream would run ahead of
  // the application's copies without the events: the copy in comes before the first launch, the
  // copy out after the last.
  std::size_t copy_in = 0, copy_out = 0;
  for (const json& op : ops) {
    if (op.at("op") == "memcpy_htod") copy_in = op.at("seq");
    if (op.at("op") == "memcpy_dtoh") copy_out = op.at("seq");
  }
  EXPECT_EQ(ops[copy_in].at("stream"), app_stream);
  EXPECT_LT(copy_in, ls.front().at("seq").get<std::size_t>());
  EXPECT_GT(copy_out, ls.back().at("seq").get<std::size_t>());
}

TEST_F(Interpose, SummaryCountsEachVariantAndWhy) {
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "16"}, {"TESSERA_TENANT", "infer"}});
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(r.summary.is_object()) << r.output;
  EXPECT_EQ(r.summary.at("tenant"), "infer");
  EXPECT_EQ(r.summary.at("partition_sms_requested"), 16);
  ASSERT_EQ(r.summary.at("partitions").size(), 1u);
  EXPECT_EQ(r.summary.at("partitions")[0].at("sms"), 16);
  EXPECT_EQ(r.summary.at("partitions")[0].at("ok"), true);
  for (const char* routed_once : {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
                                  "cuLaunchKernelEx_ptsz", "cuGraphLaunch"}) {
    SCOPED_TRACE(routed_once);
    EXPECT_EQ(entry(r, routed_once).at("routed"), 1);
    EXPECT_EQ(entry(r, routed_once).at("passed_through"), 0);
  }
  const json& coop = entry(r, "cuLaunchCooperativeKernel");
  EXPECT_EQ(coop.at("routed"), 1);
  EXPECT_EQ(coop.at("passed_through"), 1);
  EXPECT_EQ(coop.at("why"), (json{{"cooperative_too_large", 1}}));
  // How each wrapper was handed out: through cuGetProcAddress (cuLaunchKernel twice: the 12.0
  // and the 11.3 lookups) or through dlsym.
  EXPECT_EQ(entry(r, "cuLaunchKernel").at("hooked_by_proc_address"), 2);
  EXPECT_EQ(entry(r, "cuLaunchKernel_ptsz").at("hooked_by_proc_address"), 1);
  EXPECT_EQ(entry(r, "cuLaunchKernelEx_ptsz").at("hooked_by_proc_address"), 1);
  EXPECT_EQ(entry(r, "cuLaunchKernelEx").at("hooked_by_dlsym"), 1);
  EXPECT_EQ(entry(r, "cuLaunchCooperativeKernel").at("hooked_by_dlsym"), 1);
  EXPECT_EQ(entry(r, "cuGraphLaunch").at("hooked_by_dlsym"), 1);
  EXPECT_EQ(entry(r, "cuGetProcAddress_v2").at("hooked_by_dlsym"), 1);
  EXPECT_EQ(entry(r, "cuGetProcAddress_v2").at("hooked_by_proc_address"), 1);
  // The 11.3 cuGetProcAddress comes back wrapped however the driver answers for it: the fake
  // answers with an internal function, not its export, so it is wrapped by name and version and
  // counted as unmatched.
  EXPECT_EQ(entry(r, "cuGetProcAddress").at("hooked_by_proc_address"), 1);
  EXPECT_LE(entry(r, "cuGetProcAddress").at("unmatched_proc_address").get<int>(), 1);
  for (const char* launch : {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx_ptsz"}) {
    EXPECT_EQ(entry(r, launch).at("unmatched_proc_address"), 0) << launch;
  }
}

TEST_F(Interpose, WithoutPartitionSmsEveryLaunchPassesThroughAndIsCounted) {
  const Outcome r = run_driver_app({{"TESSERA_TENANT", "infer"}});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(r.fake_log.at("green_contexts").empty());
  const std::vector<json> ls = launches(r.fake_log);
  ASSERT_EQ(ls.size(), kOrder.size());
  for (const json& l : ls) {
    EXPECT_EQ(l.at("green_ctx"), 0) << name_of(l);
  }
  for (const char* symbol : {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
                             "cuLaunchKernelEx_ptsz", "cuGraphLaunch"}) {
    SCOPED_TRACE(symbol);
    EXPECT_EQ(entry(r, symbol).at("routed"), 0);
    EXPECT_EQ(entry(r, symbol).at("why"), (json{{"not_configured", 1}}));
  }
  EXPECT_EQ(entry(r, "cuLaunchCooperativeKernel").at("why"), (json{{"not_configured", 2}}));
  // No events either: the application's operations are exactly its own.
  for (const json& op : r.fake_log.at("ops")) {
    EXPECT_NE(op.at("op"), "wait");
    EXPECT_NE(op.at("op"), "event_record");
  }
}

TEST_F(Interpose, WithoutThePreloadTheProgramRunsTheSame) {
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "16"}}, /*preload=*/false);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(r.summary.is_null());
  EXPECT_EQ(launches(r.fake_log).size(), kOrder.size());
}

TEST_F(Interpose, APartitionLargerThanTheGpuPassesThroughAndSaysWhy) {
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "1000"}});
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(r.summary.at("partitions").size(), 1u);
  const json& p = r.summary.at("partitions")[0];
  EXPECT_EQ(p.at("ok"), false);
  EXPECT_NE(p.at("error").get<std::string>().find("minCount=1000"), std::string::npos) << p;
  EXPECT_EQ(entry(r, "cuLaunchKernel").at("why"), (json{{"partition_failed", 1}}));
  for (const json& l : launches(r.fake_log)) EXPECT_EQ(l.at("green_ctx"), 0);
}

TEST_F(Interpose, ReportsTheSmsTheDriverReallyGave) {
  // The fake gives 8 SMs fewer than asked (as a real driver may: notes section 1).
  json script{{"schedule", "fifo"},
              {"devices", json::array({json{{"sms", 132}, {"shortfall", 8}}})}};
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "32"}}, true, script);
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(r.summary.at("partitions").size(), 1u);
  EXPECT_EQ(r.summary.at("partitions")[0].at("sms"), 24);
  EXPECT_EQ(launches(r.fake_log).front().at("sms"), 24);
}

TEST_F(Interpose, APartitionFailingHalfWayIsUndoneAndLaunchesPassThrough) {
  json script{
      {"schedule", "fifo"},
      {"fail", json::array({json{{"call", "cuGreenCtxStreamCreate"}, {"nth", 1}, {"ret", 2}}})}};
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "16"}}, true, script);
  ASSERT_EQ(r.status, 0) << r.output;
  const json& p = r.summary.at("partitions").at(0);
  EXPECT_EQ(p.at("ok"), false);
  EXPECT_NE(p.at("error").get<std::string>().find("cuGreenCtxStreamCreate returned 2"),
            std::string::npos)
      << p;
  // The green context made before the failure is destroyed again.
  ASSERT_EQ(r.fake_log.at("green_contexts").size(), 1u);
  EXPECT_EQ(r.fake_log.at("green_contexts")[0].at("destroyed"), true);
  EXPECT_EQ(entry(r, "cuLaunchKernel").at("why"), (json{{"partition_failed", 1}}));
  EXPECT_EQ(launches(r.fake_log).size(), kOrder.size());
}

TEST_F(Interpose, PrintsNothingUnlessVerbose) {
  const Outcome quiet = run_driver_app({{"TESSERA_PARTITION_SMS", "16"}});
  ASSERT_EQ(quiet.status, 0) << quiet.output;
  EXPECT_EQ(quiet.output, "ok\n");
  const Outcome verbose =
      run_driver_app({{"TESSERA_PARTITION_SMS", "16"}, {"TESSERA_INTERPOSE_VERBOSE", "1"}});
  ASSERT_EQ(verbose.status, 0) << verbose.output;
  EXPECT_NE(verbose.output.find("tessera_interpose: context"), std::string::npos) << verbose.output;
  EXPECT_NE(verbose.output.find("green context of 16 SMs (asked 16)"), std::string::npos);
}

TEST_F(Interpose, AMalformedSmCountPassesThroughAndIsReported) {
  const Outcome r = run_driver_app({{"TESSERA_PARTITION_SMS", "sixteen"}});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.summary.at("config_error").get<std::string>().find("sixteen"), std::string::npos);
  EXPECT_EQ(entry(r, "cuLaunchKernel").at("why"), (json{{"bad_config", 1}}));
  EXPECT_TRUE(r.fake_log.at("green_contexts").empty());
}

// Four threads launch at once on their own streams: one partition is made, every launch is
// routed, and each is bracketed by events of its own thread's stream (the shared events are used
// under the partition's mutex; without it another thread's record could slip in between).
TEST_F(Interpose, ConcurrentLaunchesFromManyThreadsKeepTheirOwnStreamsOrder) {
  auto env = fake_env(json{{"schedule", "round_robin"}});
  env["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  env["TESSERA_PARTITION_SMS"] = "16";
  const Outcome r = run(TESSERA_INTERPOSE_DRIVER_APP, "threads", env);
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(r.fake_log.at("green_contexts").size(), 1u);
  EXPECT_EQ(entry(r, "cuLaunchKernel").at("routed"), 2000);
  const json& ops = r.fake_log.at("ops");
  // Indexes over the log: each stream's ops in execution order, ops by enqueue id, and the
  // stream that waited for each record.
  std::map<std::uint64_t, std::vector<std::size_t>> on_stream;
  std::map<std::uint64_t, std::size_t> at_enqueue;
  std::map<std::uint64_t, std::uint64_t> waiter_of_record;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    on_stream[ops[i].at("stream").get<std::uint64_t>()].push_back(i);
    at_enqueue[ops[i].at("enqueue").get<std::uint64_t>()] = i;
    if (ops[i].at("op") == "wait" && !ops[i].at("record").is_null()) {
      waiter_of_record[ops[i].at("record").get<std::uint64_t>()] = ops[i].at("stream");
    }
  }
  std::map<std::string, std::uint64_t> stream_of;  // kernel -> its thread's stream
  int checked = 0;
  for (const auto& [stream, indices] : on_stream) {
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const json& l = ops[indices[k]];
      if (l.at("op") != "launch") continue;
      ASSERT_TRUE(k > 0 && k + 1 < indices.size());
      const json& before = ops[indices[k - 1]];
      const json& after = ops[indices[k + 1]];
      ASSERT_EQ(before.at("op"), "wait");
      ASSERT_EQ(after.at("op"), "event_record");
      ASSERT_TRUE(at_enqueue.contains(before.at("record").get<std::uint64_t>()));
      const json& record = ops[at_enqueue.at(before.at("record").get<std::uint64_t>())];
      const auto app = record.at("stream").get<std::uint64_t>();
      const std::string kernel = l.at("kernel");
      const auto [it, fresh] = stream_of.emplace(kernel, app);
      EXPECT_EQ(it->second, app) << kernel << " waited for another thread's stream";
      const auto waiter = waiter_of_record.find(after.at("enqueue").get<std::uint64_t>());
      ASSERT_NE(waiter, waiter_of_record.end()) << kernel;
      EXPECT_EQ(waiter->second, app) << kernel;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2000);
  EXPECT_EQ(stream_of.size(), 4u);
}

Outcome run_memory_app(std::map<std::string, std::string> env, const char* mode = "memory") {
  auto all = fake_env(json::object());
  all.merge(env);
  all["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  return run(TESSERA_INTERPOSE_DRIVER_APP, mode, all);
}

TEST_F(Interpose, AllocationsPastTheMemoryLimitAreRefusedAndMemGetInfoTellsTheLimit) {
  const Outcome r = run_memory_app({{"TESSERA_MEMORY_LIMIT", "1MiB"}, {"TESSERA_TENANT", "t"}});
  ASSERT_EQ(r.status, 0) << r.output;
  // The four buffers (cuMemAlloc, cuMemAllocAsync and its _ptsz variant, cuMemCreate) fill the
  // limit; the fifth is refused (CUDA_ERROR_OUT_OF_MEMORY, 2) until cuMemFreeAsync frees one.
  EXPECT_NE(r.output.find("start free=1048576 total=1048576"), std::string::npos) << r.output;
  for (const char* line :
       {"alloc 1: 0", "alloc 2: 0", "alloc 3: 0", "four free=0 total=1048576", "alloc 4: 2",
        "alloc 4 after a free: 0", "end free=1048576 total=1048576"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  // The refusal is said on stderr, naming the tenant, the call and the sizes.
  EXPECT_NE(r.output.find("tenant 't': cuMemAlloc_v2 of 262144 bytes refused: 1048576 of its "
                          "limit of 1048576 bytes in use"),
            std::string::npos)
      << r.output;
  ASSERT_TRUE(r.summary.is_object()) << r.output;
  const json& m = r.summary.at("memory");
  EXPECT_EQ(m.at("limit"), 1048576);
  EXPECT_EQ(m.at("allocations"), 5);
  EXPECT_EQ(m.at("refused"), 1);
  EXPECT_EQ(m.at("used"), 0);
  EXPECT_EQ(m.at("peak"), 1048576);
  EXPECT_EQ(m.at("untracked_frees"), 0);
  for (const char* symbol :
       {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemGetInfo_v2", "cuMemAllocAsync",
        "cuMemAllocAsync_ptsz", "cuMemFreeAsync", "cuMemCreate", "cuMemRelease"}) {
    EXPECT_EQ(entry(r, symbol).at("hooked_by_proc_address"), 1) << symbol;
  }
}

TEST_F(Interpose, PitchedManagedAndPoolAllocationsCountToo) {
  const Outcome r = run_memory_app({{"TESSERA_MEMORY_LIMIT", "1MiB"}}, "memory-other");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* line :
       {"pitched: 0 pitch=1024", "managed: 0", "pool: 0", "pool ptsz: 0", "one byte more: 2"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  const json& m = r.summary.at("memory");
  EXPECT_EQ(m.at("allocations"), 4);
  EXPECT_EQ(m.at("refused"), 1);
  EXPECT_EQ(m.at("peak"), 1048576);  // the pitched rows as padded, 256 x 1024
  EXPECT_EQ(m.at("used"), 0);
  for (const char* symbol : {"cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemAllocFromPoolAsync",
                             "cuMemAllocFromPoolAsync_ptsz"}) {
    EXPECT_EQ(entry(r, symbol).at("hooked_by_proc_address"), 1) << symbol;
  }
}

TEST_F(Interpose, WithoutAMemoryLimitAllocationsAreCountedAndTheDeviceAnswers) {
  const Outcome r = run_memory_app({});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("alloc 4: 0"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("total=1048576"), std::string::npos) << r.output;
  const json& m = r.summary.at("memory");
  EXPECT_EQ(m.at("limit"), 0);
  EXPECT_EQ(m.at("allocations"), 6);
  EXPECT_EQ(m.at("refused"), 0);
  EXPECT_EQ(m.at("peak"), 5 * 256 * 1024);
}

TEST_F(Interpose, AMalformedMemoryLimitCountsOnlyAndSaysWhy) {
  const Outcome r = run_memory_app({{"TESSERA_MEMORY_LIMIT", "1.5GiB"}});
  ASSERT_EQ(r.status, 0) << r.output;
  const json& m = r.summary.at("memory");
  EXPECT_EQ(m.at("limit"), 0);
  EXPECT_NE(m.at("config_error").get<std::string>().find("'1.5GiB' is not a byte count"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.at("refused"), 0);
}

TEST_F(Interpose, DlsymWithRtldNextStillAnswersForTheCaller) {
  auto env = fake_env(json::object());
  env["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  const Outcome r = run(TESSERA_INTERPOSE_DRIVER_APP, "dlsym-next", env);
  EXPECT_EQ(r.status, 0) << r.output;
}

// The real CUDA runtime (cudart 13, static) under the interposer, against the fake: cudart
// fetches every launch variant through cuGetProcAddress, and each comes back wrapped. It then
// stops: it needs the driver's private export tables (cuGetExportTable), which the fake does not
// have (docs/cuda.md, "The interposer").
TEST_F(Interpose, CudaRuntimeLookupsAreHookedBeforeItStopsOnTheFake) {
  auto env = fake_env(json::object());
  env["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  env["TESSERA_PARTITION_SMS"] = "16";
  const Outcome r = run(TESSERA_INTERPOSE_RUNTIME_APP, "", env);
  ASSERT_TRUE(r.summary.is_object()) << r.output;
  for (const char* symbol :
       {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch",
        "cuGraphLaunch_ptsz"}) {
    EXPECT_GE(entry(r, symbol).at("hooked_by_proc_address").get<int>(), 1) << symbol;
  }
  EXPECT_EQ(entry(r, "cuGetProcAddress_v2").at("hooked_by_dlsym"), 1);
  bool export_table = false;
  for (const json& call : r.fake_log.at("calls")) {
    export_table = export_table || call.at("call") == "cuGetExportTable";
  }
  EXPECT_TRUE(export_table);
}

// tesserad in this process, on a fresh socket, for the length of a test.
class InProcessDaemon {
 public:
  explicit InProcessDaemon(tessera::daemon::TableOptions table_options = {},
                           const char* policy = "cogpu") {
    path_ = ::testing::TempDir() + "interpose_daemon_" + std::to_string(getpid()) + ".sock";
    tessera::daemon::TenantTable table(
        {*tessera::gpu::PartitionGrid::of(*tessera::hw::find_gpu("h100"))},
        *tessera::daemon::make_node_policy(policy, table_options.policy), table_options);
    tessera::daemon::ServerOptions options;
    options.socket_path = path_;
    auto server = tessera::daemon::ControlServer::start(options, std::move(table));
    EXPECT_TRUE(server.has_value()) << server.error().message();
    server_ = std::move(*server);
    thread_ = std::thread([this] { (void)server_->run([this] { return stop_.load(); }); });
  }
  ~InProcessDaemon() {
    stop_ = true;
    thread_.join();
  }
  const std::string& path() const { return path_; }
  json tenants() const {
    auto r = tessera::daemon::send_request(path_, {{"op", "list"}});
    return r ? (*r)["tenants"] : json();
  }

 private:
  std::string path_;
  std::unique_ptr<tessera::daemon::ControlServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A process under the interposer registers with the daemon at its first launch, waits for the
// daemon's first round to give it SMs, and runs every launch in the green context of the range
// the daemon assigned: alone on an H100-like device, a best-effort tenant gets the 128 usable SMs
// as 16 groups of 8 from one split. When it exits, the daemon forgets it.
TEST_F(Interpose, UnderTheDaemonLaunchesRunInTheAssignedRange) {
  InProcessDaemon daemon;
  const Outcome r = run_driver_app({{"TESSERA_DAEMON_SOCKET", daemon.path()},
                                    {"TESSERA_TENANT", "train"},
                                    {"TESSERA_CLASS", "best-effort"}});
  ASSERT_EQ(r.status, 0) << r.output;
  const json& d = r.summary.at("daemon");
  EXPECT_EQ(d.at("registered"), true) << r.summary.dump();
  EXPECT_EQ(d.at("launches"), kOrder.size());
  EXPECT_LE(d.at("held_launches").get<int>(), 1) << "only the first launch waits for a round";
  EXPECT_EQ(d.at("hold_timeouts"), 0);
  ASSERT_EQ(r.fake_log.at("green_contexts").size(), 1u) << r.fake_log.at("green_contexts").dump();
  const json& green = r.fake_log.at("green_contexts").at(0);
  EXPECT_EQ(green.at("sm_ids").size(), 128u);
  EXPECT_EQ(green.at("sm_ids").at(0), 0);
  for (const json& l : launches(r.fake_log)) {
    SCOPED_TRACE(name_of(l));
    // The cooperative grid is sized for the whole device: it does not fit 128 SMs.
    EXPECT_EQ(l.at("green_ctx"), name_of(l) == "app_coop_big" ? json(0) : green.at("id"));
  }
  EXPECT_EQ(entry(r, "cuLaunchCooperativeKernel").at("why").at("cooperative_too_large"), 1);
  EXPECT_EQ(r.summary.at("partitions").at(0).at("first_sm"), 0);
  for (int i = 0; i < 200 && !daemon.tenants().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(daemon.tenants().empty()) << "the tenant left with its process";
}

// Two claims the DRA driver prepared on one GPU, each run as a process with the environment its
// CDI spec gives (the memory limit left out of it: the daemon's grant alone sets it): each
// registers with tesserad under its claim's tenant and is held to the memory its claim asked
// for, 1 MiB and 2 MiB.
TEST_F(Interpose, ClaimsPreparedByTheDraDriverRunUnderTheirGrants) {
  InProcessDaemon daemon;
  const std::string chat_uid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f";
  const std::string train_uid = "0b7e4d21-95aa-4f3c-8d11-7e6f5a4b3c2d";
  tessera::test::FakeClaims claims;
  claims.objects["serving/chat"] = tessera::test::allocated_claim(chat_uid, "gpu-0", "50", "1Mi");
  claims.objects["training/train"] =
      tessera::test::allocated_claim(train_uid, "gpu-0", "50", "2Mi");
  tessera::dra::DaemonGrants grants(daemon.path());
  tessera::dra::DriverOptions options;
  options.node_name = "node-a";
  const std::string root = ::testing::TempDir() + "interpose_dra_" + std::to_string(getpid());
  options.cdi_dir = root;
  options.checkpoint_path = root + "/checkpoint.json";
  options.interposer_container_path = TESSERA_INTERPOSE_LIB;
  options.daemon_socket = daemon.path();
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  auto driver = tessera::dra::DraDriver::open(options, claims, grants);
  ASSERT_TRUE(driver) << driver.error().message();

  std::vector<Running> running;
  for (const auto& [ns, name, uid] :
       {std::tuple{"serving", "chat", chat_uid}, std::tuple{"training", "train", train_uid}}) {
    ASSERT_TRUE((*driver)->prepare({.ns = ns, .name = name, .uid = uid}));
    const json spec = read_json(root + "/gpu.tessera.io-claim_" + uid + ".json");
    auto env = fake_env(json::object());
    for (const auto& edits :
         {spec.at("containerEdits"), spec.at("devices").at(0).at("containerEdits")}) {
      for (const auto& e : edits.at("env")) {
        const std::string entry = e.get<std::string>();
        env[entry.substr(0, entry.find('='))] = entry.substr(entry.find('=') + 1);
      }
    }
    env.erase("TESSERA_MEMORY_LIMIT");
    running.push_back(start(TESSERA_INTERPOSE_DRIVER_APP, "memory", env));
  }
  const Outcome chat = finish(running[0]);
  const Outcome train = finish(running[1]);
  ASSERT_EQ(chat.status, 0) << chat.output;
  ASSERT_EQ(train.status, 0) << train.output;
  EXPECT_EQ(chat.summary.at("daemon").at("registered"), true) << chat.summary.dump();
  EXPECT_EQ(train.summary.at("daemon").at("registered"), true) << train.summary.dump();
  for (const char* line : {"start free=1048576 total=1048576", "alloc 4: 2"}) {
    EXPECT_NE(chat.output.find(line), std::string::npos) << line << "\n" << chat.output;
  }
  for (const char* line : {"start free=2097152 total=2097152", "alloc 4: 0"}) {
    EXPECT_NE(train.output.find(line), std::string::npos) << line << "\n" << train.output;
  }
  EXPECT_NE(chat.output.find("tenant 'chat-6f1c9a2e'"), std::string::npos) << chat.output;
  std::filesystem::remove_all(root);
}

// A daemon that is not there, or that refuses the registration: the process runs as without one
// and the summary says why.
TEST_F(Interpose, WithoutAReachableDaemonLaunchesGoOnAsBefore) {
  const Outcome r =
      run_driver_app({{"TESSERA_DAEMON_SOCKET", ::testing::TempDir() + "nobody-listens.sock"}});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.summary.at("daemon").at("registered"), false);
  EXPECT_NE(r.summary.at("daemon").at("error").get<std::string>().find("cannot connect"),
            std::string::npos);
  EXPECT_EQ(entry(r, "cuLaunchKernel").at("why").at("not_configured"), 1);

  InProcessDaemon daemon;
  const Outcome refused =
      run_driver_app({{"TESSERA_DAEMON_SOCKET", daemon.path()}, {"TESSERA_TENANT", "bad/name"}});
  ASSERT_EQ(refused.status, 0) << refused.output;
  EXPECT_NE(refused.summary.at("daemon").at("error").get<std::string>().find("TESSERA_TENANT"),
            std::string::npos);
}

// The SM ids of each green context in a fake's log, by id.
std::map<std::uint64_t, std::vector<int>> green_sms(const json& log) {
  std::map<std::uint64_t, std::vector<int>> out;
  for (const json& g : log.at("green_contexts")) {
    out[g.at("id").get<std::uint64_t>()] = g.at("sm_ids").get<std::vector<int>>();
  }
  return out;
}

// The SMs of the median launch of kernel `phase` (0 for a launch on the application's stream).
std::size_t median_sms(const json& log, const std::string& phase) {
  const auto greens = green_sms(log);
  std::vector<std::size_t> sizes;
  for (const json& l : launches(log)) {
    if (l.at("kernel") != phase) continue;
    const auto g = l.at("green_ctx").get<std::uint64_t>();
    sizes.push_back(g == 0 ? 0 : greens.at(g).size());
  }
  if (sizes.empty()) return 0;
  std::sort(sizes.begin(), sizes.end());
  return sizes[sizes.size() / 2];
}

std::map<std::string, std::string> daemon_env(const std::string& socket, const char* tenant,
                                              const char* tenant_class) {
  auto env = fake_env(json{{"schedule", "fifo"}});
  env["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  env["TESSERA_DAEMON_SOCKET"] = socket;
  env["TESSERA_TENANT"] = tenant;
  env["TESSERA_CLASS"] = tenant_class;
  env["TESSERA_HOLD_LIMIT_MS"] = "";
  return env;
}

// Two processes of the driver program at once: an inference that launches for 400 ms, is idle
// for 400 ms and launches again for 400 ms, and a trainer that launches throughout.
std::pair<Outcome, Outcome> inference_goes_idle_beside_trainer(
    const std::map<std::string, std::string>& inference_env,
    const std::map<std::string, std::string>& trainer_env) {
  const Running inference =
      start(TESSERA_INTERPOSE_DRIVER_APP, "phases:on400,off400,on400", inference_env);
  const Running trainer =
      start(TESSERA_INTERPOSE_DRIVER_APP, "phases:on400,on400,on400", trainer_env);
  Outcome hp = finish(inference);
  return {std::move(hp), finish(trainer)};
}

// An inference and a trainer in two processes under one daemon (cogpu). While the inference
// launches, it runs on SMs 0-119 and the trainer on 120-127 (disjoint, and each process made its
// green context from its own split of the device); when the inference goes idle for 400 ms the
// trainer's launches move to all 128 usable SMs; when it comes back they move back. Timing on a
// loaded machine shifts the edges by some milliseconds, so each phase is judged by its median
// launch.
TEST_F(Interpose, TwoProcessesTradeSmsAsTheInferenceGoesIdleAndComesBack) {
  InProcessDaemon daemon;
  const auto [hp, be] =
      inference_goes_idle_beside_trainer(daemon_env(daemon.path(), "chat", "latency-critical"),
                                         daemon_env(daemon.path(), "train", "best-effort"));
  ASSERT_EQ(hp.status, 0) << hp.output;
  ASSERT_EQ(be.status, 0) << be.output;
  EXPECT_EQ(hp.summary.at("daemon").at("registered"), true) << hp.output;
  EXPECT_EQ(be.summary.at("daemon").at("registered"), true) << be.output;

  EXPECT_EQ(median_sms(hp.fake_log, "phase0"), 120u);
  EXPECT_EQ(median_sms(be.fake_log, "phase0"), 8u);
  EXPECT_EQ(median_sms(be.fake_log, "phase1"), 128u) << "the inference is idle";
  EXPECT_EQ(median_sms(hp.fake_log, "phase2"), 120u);
  EXPECT_EQ(median_sms(be.fake_log, "phase2"), 8u) << "the inference is back";

  // The two processes' partitions while both run are disjoint.
  std::set<int> inference_sms;
  for (const auto& [id, sms] : green_sms(hp.fake_log)) {
    if (sms.size() == 120) inference_sms.insert(sms.begin(), sms.end());
  }
  ASSERT_EQ(inference_sms.size(), 120u);
  bool trainer_small = false;
  for (const auto& [id, sms] : green_sms(be.fake_log)) {
    if (sms.size() != 8) continue;
    trainer_small = true;
    for (int sm : sms) EXPECT_EQ(inference_sms.count(sm), 0u) << "SM " << sm << " in both";
  }
  EXPECT_TRUE(trainer_small);
}

// An inference that decodes in CUDA graphs (each 5 ms on the fake GPU) with a 50 ms TPOT target:
// the interposer times its graphs, and cogpu, seeing a step take 5 ms, shrinks its partition to
// what a step needs to take half the target (at most 120 x 5 / 25 = 24 SMs, then less), so the
// trainer beside it gets most of the GPU instead of 8 SMs.
// The median SMs of the second half of a log's launches (0 for the application's own stream),
// in order: judged after the first steps are seen.
std::size_t second_half_median(const json& log) {
  const auto greens = green_sms(log);
  std::vector<std::size_t> sizes;
  for (const json& l : launches(log)) {
    const auto g = l.at("green_ctx").get<std::uint64_t>();
    sizes.push_back(g == 0 ? 0 : greens.at(g).size());
  }
  std::vector<std::size_t> tail(sizes.begin() + static_cast<std::ptrdiff_t>(sizes.size() / 2),
                                sizes.end());
  std::sort(tail.begin(), tail.end());
  return tail.empty() ? std::size_t{0} : tail[tail.size() / 2];
}

// An inference that decodes in CUDA graphs (each 5 ms on the fake GPU, one launched every
// millisecond for 600 ms) with a 50 ms TPOT target, beside a trainer that launches throughout.
std::pair<Outcome, Outcome> graphs_beside_trainer(const std::string& socket) {
  auto hp_env = daemon_env(socket, "chat", "latency-critical");
  hp_env["TESSERA_TPOT_SLO_MS"] = "50";
  hp_env["FAKE_CUDA_SCRIPT"] = json{{"kernel_ns", {{"graph", 5'000'000}}}}.dump();
  const Running inference = start(TESSERA_INTERPOSE_DRIVER_APP, "graphs:600", hp_env);
  const Running trainer = start(TESSERA_INTERPOSE_DRIVER_APP, "phases:on600",
                                daemon_env(socket, "train", "best-effort"));
  Outcome hp = finish(inference);
  return {std::move(hp), finish(trainer)};
}

TEST_F(Interpose, TimedGraphStepsShrinkTheInferenceToItsTpotTarget) {
  InProcessDaemon daemon;
  const auto [hp, be] = graphs_beside_trainer(daemon.path());
  ASSERT_EQ(hp.status, 0) << hp.output;
  ASSERT_EQ(be.status, 0) << be.output;
  EXPECT_LE(second_half_median(hp.fake_log), 24u);
  EXPECT_GE(second_half_median(be.fake_log), 104u);
  EXPECT_GT(hp.summary.at("daemon").at("launches").get<int>(), 100);
}

// priority-fill across two processes: the inference (latency-critical with a TPOT target) launches
// on the whole GPU on a stream of CUDA priority -1, made in its own context (no green context);
// while it launches, the trainer runs at priority 0 in a green context of the highest 8 of the 128
// usable SMs (the 5% reserve rounded up to the grid); while it is idle, the trainer launches on its
// own stream on the whole GPU; when it is back, the trainer returns to the reserve.
TEST_F(Interpose, PriorityFillServesTheInferenceFirstAndHoldsTheTrainerToTheReserve) {
  InProcessDaemon daemon({}, "priority-fill");
  auto hp_env = daemon_env(daemon.path(), "chat", "latency-critical");
  hp_env["TESSERA_TPOT_SLO_MS"] = "50";
  const auto [hp, be] =
      inference_goes_idle_beside_trainer(hp_env, daemon_env(daemon.path(), "train", "best-effort"));
  ASSERT_EQ(hp.status, 0) << hp.output;
  ASSERT_EQ(be.status, 0) << be.output;

  // Every inference launch after its first round: the whole GPU, priority -1.
  int hp_routed = 0;
  for (const json& l : launches(hp.fake_log)) {
    if (l.at("priority") != -1) continue;
    ++hp_routed;
    EXPECT_EQ(l.at("green_ctx"), 0) << "the whole GPU, not a partition";
  }
  EXPECT_GE(hp_routed, static_cast<int>(launches(hp.fake_log).size()) - 2)
      << "only launches before the first round go on the application's stream";
  EXPECT_EQ(hp.summary.at("partitions").at(0).at("whole_gpu"), true);
  EXPECT_EQ(hp.summary.at("partitions").at(0).at("stream_priority"), -1);

  const auto greens = green_sms(be.fake_log);
  for (const auto& [id, sms] : greens) {
    EXPECT_EQ(sms.size(), 8u);
    EXPECT_EQ(sms.front(), 120);
  }
  EXPECT_EQ(median_sms(be.fake_log, "phase0"), 8u);
  EXPECT_EQ(median_sms(be.fake_log, "phase1"), 0u) << "the inference is idle: its own stream";
  EXPECT_EQ(median_sms(be.fake_log, "phase2"), 8u) << "the inference is back";
  for (const json& l : launches(be.fake_log)) EXPECT_EQ(l.at("priority"), 0);
}

// A memory limit the daemon sets on a running tenant: the process registered at its first
// allocation (it never launches), holds one 256 KiB buffer, and after `set` gives it 768 KiB,
// cuMemGetInfo says so and two more buffers fit, the third is refused; the daemon sees the limit
// in force and the refusal on the page.
TEST_F(Interpose, TheDaemonsMemoryLimitHoldsTheNextAllocations) {
  InProcessDaemon daemon;
  const std::string path = ::testing::TempDir() + "memory_steps_" + std::to_string(getpid());
  std::remove((path + ".ready").c_str());
  std::remove((path + ".go").c_str());
  auto env = fake_env(json::object());
  env["LD_PRELOAD"] = TESSERA_INTERPOSE_LIB;
  env["TESSERA_DAEMON_SOCKET"] = daemon.path();
  env["TESSERA_TENANT"] = "train";
  const Running app = start(TESSERA_INTERPOSE_DRIVER_APP, "memory-steps:" + path, env);
  bool ready = false;
  for (int i = 0; i < 1000 && !ready; ++i) {
    ready = std::ifstream(path + ".ready").good();
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ready);
  ASSERT_EQ(daemon.tenants().size(), 1u) << "registered at its first allocation";
  auto set = tessera::daemon::send_request(
      daemon.path(), {{"op", "set"}, {"tenant", "train"}, {"memory_limit_bytes", 786432}});
  ASSERT_TRUE(set) << set.error().message();
  std::ofstream(path + ".go").put('\n');
  const Outcome r = finish(app);
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* line :
       {"first: 0", "after free=524288 total=786432", "step 0: 0", "step 1: 0", "step 2: 2"}) {
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  }
  EXPECT_EQ(r.output.find("step 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("limit of 786432 bytes in use"), std::string::npos) << r.output;
  EXPECT_EQ(r.summary.at("memory").at("limit"), 786432);
  EXPECT_EQ(r.summary.at("memory").at("refused"), 1);
}

// priority-fill with slo_guided: the inference's graphs (5 ms each on the fake GPU) are timed on
// its whole-GPU stream of priority -1, and each is well within half its 50 ms TPOT target, so
// the trainer's reserve grows from 8 SMs a step per round: in the second half the trainer runs
// on most of the GPU while the inference keeps the whole GPU at the higher priority.
TEST_F(Interpose, SloGuidedPriorityFillGrowsTheTrainersReserveWhileTheStepsHaveSlack) {
  tessera::daemon::TableOptions options;
  options.policy.slo_guided = true;
  InProcessDaemon daemon(options, "priority-fill");
  const auto [hp, be] = graphs_beside_trainer(daemon.path());
  ASSERT_EQ(hp.status, 0) << hp.output;
  ASSERT_EQ(be.status, 0) << be.output;
  EXPECT_GE(second_half_median(be.fake_log), 64u);
  EXPECT_EQ(second_half_median(hp.fake_log), 0u) << "the whole GPU, not a partition";
  const auto hp_launches = launches(hp.fake_log);
  ASSERT_FALSE(hp_launches.empty());
  EXPECT_EQ(hp_launches.back().at("priority"), -1);
}

// The gate: a trainer that starts while the inference is busy has its first launch held (no
// partitions: every launch stays on the application's stream) until the inference's process
// exits, and then launches freely.
TEST_F(Interpose, TheGateHoldsTheTrainerWhileTheInferenceRuns) {
  tessera::daemon::TableOptions options;
  options.mechanism = tessera::daemon::Mechanism::kGate;
  InProcessDaemon daemon(options);
  const Running inference = start(TESSERA_INTERPOSE_DRIVER_APP, "phases:on600",
                                  daemon_env(daemon.path(), "chat", "latency-critical"));
  for (int i = 0; i < 300 && daemon.tenants().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto env = daemon_env(daemon.path(), "train", "best-effort");
  env["TESSERA_HOLD_LIMIT_MS"] = "5000";
  const Running trainer = start(TESSERA_INTERPOSE_DRIVER_APP, "phases:on300,on300", env);
  const Outcome hp = finish(inference);
  const Outcome be = finish(trainer);
  ASSERT_EQ(hp.status, 0) << hp.output;
  ASSERT_EQ(be.status, 0) << be.output;
  int first = 0;
  int second = 0;
  for (const json& l : launches(be.fake_log)) {
    EXPECT_EQ(l.at("green_ctx"), 0) << "the gate makes no partitions";
    (l.at("kernel") == "phase0" ? first : second) += 1;
  }
  EXPECT_LE(first, 3) << "held while the inference ran";
  EXPECT_GE(second, 100) << "free once it was gone";
  EXPECT_GE(be.summary.at("daemon").at("held_launches").get<int>(), 1);
  EXPECT_EQ(be.summary.at("daemon").at("hold_timeouts"), 0);
  for (const json& l : launches(hp.fake_log)) EXPECT_EQ(l.at("green_ctx"), 0);
}

// mps-percentage: a process registers when CUDA starts in it and the driver's cuInit sees the
// percentage the daemon gave (its SM share, rounded up), or a lower one its environment already
// had; a process without a share gets none. Every launch goes to the whole GPU.
TEST_F(Interpose, MpsPercentageIsInTheEnvironmentBeforeCudaStarts) {
  tessera::daemon::TableOptions options;
  options.mechanism = tessera::daemon::Mechanism::kMpsPercentage;
  InProcessDaemon daemon(options);
  const auto seen_at_init = [&](const char* share, const char* own) {
    auto env = daemon_env(daemon.path(), "train", "best-effort");
    env["TESSERA_SM_SHARE"] = share;
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = own;
    const Outcome r = run(TESSERA_INTERPOSE_DRIVER_APP, "launches", env);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.summary.at("daemon").at("registered"), true) << r.output;
    for (const json& l : launches(r.fake_log)) EXPECT_EQ(l.at("green_ctx"), 0) << l.dump();
    EXPECT_GE(entry(r, "cuLaunchKernel").at("why").value("assigned_whole_gpu", 0), 1)
        << r.summary.dump();
    return std::pair{r.fake_log.at("init").at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
                     r.summary.at("daemon").at("mps_active_thread_percentage")};
  };
  EXPECT_EQ(seen_at_init("0.3", ""), std::pair(json("30"), json(30)));
  EXPECT_EQ(seen_at_init("0.255", ""), std::pair(json("26"), json(26))) << "rounded up";
  EXPECT_EQ(seen_at_init("0.3", "20"), std::pair(json("20"), json(20))) << "the lower cap holds";
  EXPECT_EQ(seen_at_init("0.3", "50"), std::pair(json("30"), json(30)));
  EXPECT_EQ(seen_at_init("", ""), std::pair(json(nullptr), json(0))) << "no share, no cap";
}

// A process that registered and then forked a worker (which never launches) exits: the worker
// did not keep the registration's connection, so the daemon forgets the tenant while the worker
// lives on.
TEST_F(Interpose, AForkedWorkerDoesNotKeepItsParentsRegistration) {
  InProcessDaemon daemon;
  auto env = daemon_env(daemon.path(), "chat", "latency-critical");
  const Outcome r = run(TESSERA_INTERPOSE_DRIVER_APP, "fork:5000", env);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.summary.at("daemon").at("registered"), true) << r.summary.dump();
  const std::size_t at = r.output.find("child ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const pid_t worker = std::atoi(r.output.c_str() + at + 6);
  ASSERT_GT(worker, 0) << r.output;
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = daemon.tenants().empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const bool worker_alive = kill(worker, 0) == 0;
  kill(worker, SIGKILL);
  EXPECT_TRUE(worker_alive) << "the worker was to outlive its parent for this test to mean much";
  EXPECT_TRUE(gone) << "the tenant is still registered: " << daemon.tenants().dump();
}

// tesserad killed mid-run (SIGKILL) and started again: the application never stops launching (on
// its last assignment meanwhile), registers again with the new daemon and is in its table.
TEST_F(Interpose, AfterTheDaemonIsKilledTheApplicationGoesOnAndRegistersAgain) {
  const std::string socket =
      ::testing::TempDir() + "interpose_restart_" + std::to_string(getpid()) + ".sock";
  auto start_daemon = [&] {
    return start(
        TESSERA_BIN,
        std::vector<std::string>{"daemon", "--gpu", "h100", "--mechanism", "green-contexts",
                                 "--policy", "cogpu", "--socket", socket},
        {});
  };
  auto listening = [&] {
    for (int i = 0; i < 500; ++i) {
      if (tessera::daemon::send_request(socket, {{"op", "list"}})) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  Running first = start_daemon();
  ASSERT_TRUE(listening()) << read_file(first.output);
  const Running app = start(TESSERA_INTERPOSE_DRIVER_APP, "phases:on1500",
                            daemon_env(socket, "train", "best-effort"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(first.pid, SIGKILL);
  finish(first);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Running second = start_daemon();
  ASSERT_TRUE(listening()) << read_file(second.output);
  bool back = false;
  for (int i = 0; i < 300 && !back; ++i) {
    auto r = tessera::daemon::send_request(socket, {{"op", "list"}});
    back = r && (*r)["tenants"].size() == 1 && (*r)["tenants"][0]["tenant"] == "train";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(back) << "the application registered with the new daemon";
  const Outcome r = finish(app);
  kill(second.pid, SIGTERM);
  const Outcome stopped = finish(second);
  EXPECT_EQ(stopped.status, 0) << stopped.output;
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.summary.at("daemon").at("registrations"), 2) << r.output;
  EXPECT_NE(r.output.find("went away"), std::string::npos) << r.output;
  EXPECT_EQ(median_sms(r.fake_log, "phase0"), 128u);
}

TEST_F(RealGpuInterpose, CudaRuntimeProgramRunsInItsPartitionWithCorrectResults) {
  REAL_GPU_OR_SKIP(driver);
  const Outcome r = run(TESSERA_INTERPOSE_RUNTIME_APP, "",
                        {{"LD_PRELOAD", TESSERA_INTERPOSE_LIB},
                         {"TESSERA_PARTITION_SMS", "16"},
                         {"TESSERA_TENANT", "runtime_app"}});
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(r.summary.is_object()) << r.output;
  std::cout << "summary: " << r.summary.dump() << "\n";
  ASSERT_EQ(r.summary.at("partitions").size(), 1u);
  EXPECT_EQ(r.summary.at("partitions")[0].at("ok"), true) << r.summary;
  EXPECT_GE(r.summary.at("partitions")[0].at("sms").get<int>(), 16);
  // Summed over the variants: which ones cudart uses (plain or _ptsz; cooperative launches
  // through cuLaunchCooperativeKernel or cuLaunchKernelEx) is its choice.
  int kernels_routed = 0, graphs_routed = 0, capturing = 0, other_passes = 0;
  for (const auto& [symbol, counts] : r.summary.at("entry_points").items()) {
    if (!counts.contains("routed")) continue;  // not a launch
    const int routed = counts.at("routed");
    (symbol.starts_with("cuGraphLaunch") ? graphs_routed : kernels_routed) += routed;
    for (const auto& [why, n] : counts.at("why").items()) {
      (why == "stream_capturing" ? capturing : other_passes) += n.get<int>();
    }
  }
  // Five kernels outside the capture (<<<>>> on s, on the per-thread stream, Ex, cooperative,
  // <<<>>> on s), the captured one left alone, the graph launched twice.
  EXPECT_EQ(kernels_routed, 5) << r.summary;
  EXPECT_EQ(capturing, 1) << r.summary;
  EXPECT_EQ(graphs_routed, 2) << r.summary;
  EXPECT_EQ(other_passes, 0) << r.summary;
}

// cudart's cudaMalloc and cudaMallocManaged reach the wrapped entry points, and a limit well
// above the program's 256 KiB refuses nothing.
TEST_F(RealGpuInterpose, CudaRuntimeAllocationsAreCountedAgainstTheLimit) {
  REAL_GPU_OR_SKIP(driver);
  const Outcome r = run(TESSERA_INTERPOSE_RUNTIME_APP, "",
                        {{"LD_PRELOAD", TESSERA_INTERPOSE_LIB}, {"TESSERA_MEMORY_LIMIT", "1GiB"}});
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(r.summary.is_object()) << r.output;
  std::cout << "memory: " << r.summary.at("memory").dump() << "\n";
  const json& m = r.summary.at("memory");
  EXPECT_GE(m.at("allocations").get<int>(), 2) << m;  // cudaMalloc and cudaMallocManaged
  EXPECT_EQ(m.at("refused"), 0) << m;
  EXPECT_GE(m.at("peak").get<int>(), (1 << 16) * 4) << m;
}

TEST_F(RealGpuInterpose, CudaRuntimeProgramPassesThroughWithoutPartition) {
  REAL_GPU_OR_SKIP(driver);
  const Outcome r = run(TESSERA_INTERPOSE_RUNTIME_APP, "", {{"LD_PRELOAD", TESSERA_INTERPOSE_LIB}});
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(r.summary.is_object()) << r.output;
  EXPECT_TRUE(r.summary.at("partitions").empty());
}

}  // namespace
