// The MIG manager's journal and what a restart does with it: records read back as written, a
// record torn by a crash dropped, a malformed one named, the lock held against a second manager;
// the journaled device records before it acknowledges; recovery stops a dead run's process groups
// (and nothing that only reuses their numbers) and destroys the instances it created.

#include "tessera/mig/runtime/journal.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/mig/sim_mig.hpp"
#include "tessera/core/process_table.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/mig/runtime/journaled_device.hpp"
#include "tessera/mig/runtime/recovery.hpp"

namespace tessera::mig {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("tessera_journal_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    path_ = (dir_ / "state" / "gpu0.journal").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Journal open() {
    auto j = Journal::open(path_);
    EXPECT_TRUE(j) << (j ? "" : j.error().message());
    return std::move(*j);
  }
  std::string read() const {
    std::ifstream in(path_);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(JournalTest, RecordsReadBackAsWrittenInANewProcessView) {
  {
    Journal j = open();
    EXPECT_FALSE(j.state().has_run);
    ASSERT_TRUE(j.begin("00ff", {"a", "b", "c"}));
    ASSERT_TRUE(j.instance_created({.id = 3, .profile_id = 19, .start = 0}));
    ASSERT_TRUE(j.instance_created({.id = 4, .profile_id = 9, .start = 4}));
    ASSERT_TRUE(j.job_started("a", 3, device::JobProcess{.process_group = 4242, .start_ticks = 7}));
    ASSERT_TRUE(j.job_started("b", 4, std::nullopt));
    ASSERT_TRUE(j.job_exited("a"));
    ASSERT_TRUE(j.job_resolved("a", true));
    ASSERT_TRUE(j.instance_destroyed(3));
  }
  const Journal j = open();  // the lock went with the first object
  const JournalState& s = j.state();
  EXPECT_TRUE(s.has_run);
  EXPECT_EQ(s.jobs_digest, "00ff");
  EXPECT_EQ(s.jobs, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(s.manager_pid, getpid());
  EXPECT_EQ(s.boot_id, core::boot_id());
  EXPECT_EQ(s.unresolved(), (std::vector<std::string>{"b", "c"}));
  ASSERT_EQ(s.instances.size(), 1u);
  EXPECT_EQ(s.instances.at(4).profile_id, 9);
  EXPECT_EQ(s.instances.at(4).start, 4);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes.at("b").instance, 4u);
  EXPECT_EQ(s.processes.at("b").process.process_group, 0);
}

// A restart appends to what the earlier run wrote, and never over it.
TEST_F(JournalTest, AReopenedJournalAppendsAfterTheEarlierRecords) {
  {
    Journal j = open();
    ASSERT_TRUE(j.begin("d", {"a", "b"}));
    ASSERT_TRUE(j.job_resolved("a", true));
  }
  {
    Journal j = open();
    ASSERT_TRUE(j.resume());
    ASSERT_TRUE(j.instance_created({.id = 5, .profile_id = 19, .start = 1}));
  }
  const Journal j = open();
  EXPECT_EQ(j.state().jobs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(j.state().unresolved(), std::vector<std::string>{"b"});
  EXPECT_TRUE(j.state().instances.contains(5));
}

TEST_F(JournalTest, BeginDropsTheOldRunAndFinishRemovesTheFile) {
  Journal j = open();
  ASSERT_TRUE(j.begin("1", {"a"}));
  ASSERT_TRUE(j.job_resolved("a", false));
  ASSERT_TRUE(j.begin("2", {"x", "y"}));
  EXPECT_EQ(j.state().jobs_digest, "2");
  EXPECT_TRUE(j.state().resolved.empty());
  EXPECT_EQ(read().find("\"a\""), std::string::npos) << read();
  ASSERT_TRUE(j.finish());
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_FALSE(j.state().has_run);
}

TEST_F(JournalTest, ARecordTornByACrashIsDroppedAndTheFileMended) {
  {
    Journal j = open();
    ASSERT_TRUE(j.begin("d", {"a", "b"}));
    ASSERT_TRUE(j.job_resolved("a", true));
  }
  std::ofstream(path_, std::ios::app) << R"({"event":"job_resolved","job":"b","comp)";
  {
    const Journal j = open();
    EXPECT_EQ(j.state().unresolved(), std::vector<std::string>{"b"});
  }
  const std::string text = read();
  EXPECT_EQ(text.back(), '\n') << text;
  EXPECT_EQ(text.find("comp)"), std::string::npos) << text;
}

TEST_F(JournalTest, AMalformedRecordIsAnErrorNamingFileAndLine) {
  {
    Journal j = open();
    ASSERT_TRUE(j.begin("d", {"a"}));
  }
  std::ofstream(path_, std::ios::app) << "{\"event\":\"instance\",\"id\":\"three\"}\n";
  auto j = Journal::open(path_);
  ASSERT_FALSE(j);
  EXPECT_NE(j.error().message().find(path_ + "' line 2: not a journal record"), std::string::npos)
      << j.error().message();
}

TEST_F(JournalTest, ASecondManagerIsRefusedWhileTheFirstHoldsIt) {
  Journal first = open();
  ASSERT_TRUE(first.begin("d", {"a"}));
  // flock locks belong to the open file, so a second open in this process is refused as another
  // process's would be.
  auto second = Journal::open(path_);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find(fmt::format("in use by process {}", getpid())),
            std::string::npos)
      << second.error().message();
}

TEST(JobsFileDigest, IsStableAndTellsFilesApart) {
  EXPECT_EQ(digest_jobs_file(""), "cbf29ce484222325");   // FNV-1a 64's offset basis
  EXPECT_EQ(digest_jobs_file("a"), "af63dc4c8601ec8c");  // FNV-1a 64 of "a"
  EXPECT_NE(digest_jobs_file("jobs: [a]"), digest_jobs_file("jobs: [b]"));
}

// A process group of its own running `sh -c script` (as NvmlMigDevice starts a job), and its
// record; the test reaps the leader when it ends, as init reaps an orphan.
struct Group {
  pid_t pid = -1;
  device::JobProcess process;
};

Group start_group(const std::string& script) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const char* argv[] = {"sh", "-c", script.c_str(), nullptr};
  Group g;
  EXPECT_EQ(posix_spawnp(&g.pid, "sh", nullptr, &attr, const_cast<char**>(argv), environ), 0);
  posix_spawnattr_destroy(&attr);
  auto info = core::read_process(g.pid);
  EXPECT_TRUE(info) << (info ? "" : info.error().message());
  g.process = {.process_group = g.pid, .start_ticks = info ? info->start_ticks : 0};
  return g;
}

// Reaps the leader in the background so that a stopped group is seen to end (its zombie would
// otherwise stay, as it would not under init).
std::jthread reaper(pid_t pid) {
  return std::jthread([pid] {
    int status = 0;
    waitpid(pid, &status, 0);
  });
}

TEST(StopProcessGroup, StopsTheLeaderAndWhatItStartedAndCountsThem) {
  // The shell and the sleeps it starts ignore SIGTERM, so the group also needs the SIGKILL that
  // follows the grace period.
  Group g = start_group("trap '' TERM; sleep 30 & sleep 30; wait");
  auto r = reaper(g.pid);
  for (int i = 0; i < 100 && core::processes_in_group(g.pid, 0).size() < 3; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(core::processes_in_group(g.pid, g.process.start_ticks).size(), 3u);
  EXPECT_EQ(stop_process_group(g.process, 200ms), 3);
  r.join();
  // The sleeps' zombies may stay where the container's init does not reap: they have ended.
  for (const core::ProcessInfo& p : core::processes_in_group(g.pid, 0)) {
    EXPECT_EQ(p.state, 'Z') << "process " << p.pid << " still runs";
  }
  EXPECT_EQ(stop_process_group(g.process, 200ms), 0);  // nothing left: nothing signalled
}

TEST(StopProcessGroup, LeavesAGroupThatOnlyReusesTheNumber) {
  Group g = start_group("exec sleep 30");
  auto r = reaper(g.pid);
  // A record of a group that started after this one, as a later run's group of the same number
  // would: the process now in it is not that run's.
  device::JobProcess later = g.process;
  later.start_ticks += 1'000'000;
  EXPECT_EQ(stop_process_group(later, 100ms), 0);
  EXPECT_EQ(kill(g.pid, 0), 0) << "the process was signalled";
  EXPECT_EQ(stop_process_group(g.process, 2s), 1);
}

// The journaled device on the simulated MIG GPU: instances and jobs are recorded as they happen,
// and recover() undoes what a run left.
class JournaledDeviceTest : public JournalTest {
 protected:
  void SetUp() override {
    JournalTest::SetUp();
    auto spec = hw::find_gpu("a100-40gb");
    ASSERT_TRUE(spec);
    auto mig = sim::SimMig::create(engine_, *spec, {});
    ASSERT_TRUE(mig) << mig.error().message();
    device_ = std::move(*mig);
  }
  sim::Engine engine_;
  std::unique_ptr<sim::SimMig> device_;
};

struct NullObserver final : device::MigJobObserver {
  void on_sample(const device::JobSample&) override {}
  void on_exit(const device::JobExit& e) override { exits.push_back(e); }
  std::vector<device::JobExit> exits;
};

TEST_F(JournaledDeviceTest, RecordsInstancesAndJobsAndRecoveryDestroysWhatIsLeft) {
  Journal journal = open();
  ASSERT_TRUE(journal.begin("d", {"a"}));
  JournaledMigDevice d(*device_, journal);
  auto kept = d.create_instance(19, 0);   // 1g.5gb
  auto freed = d.create_instance(14, 2);  // 2g.10gb
  ASSERT_TRUE(kept && freed);
  ASSERT_TRUE(d.destroy_instance(freed->id));
  auto job = std::make_shared<workload::BatchJob>();
  job->name = "a";
  job->iterations = 3;
  job->iteration_time_full = core::millis(10);
  job->memory.base_bytes = 1 << 30;
  NullObserver observer;
  auto run = d.start_job(kept->id, job, observer);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_TRUE(journal.state().processes.contains("a"));
  ASSERT_TRUE(d.run([&] { return !observer.exits.empty(); }));
  ASSERT_EQ(observer.exits.size(), 1u);
  EXPECT_FALSE(journal.state().processes.contains("a"));
  ASSERT_EQ(journal.state().instances.size(), 1u);
  EXPECT_TRUE(journal.state().instances.contains(kept->id));

  // Something else made an instance where the run had one recorded: a recorded instance that is
  // not on the device any more is only noted.
  ASSERT_TRUE(journal.instance_created({.id = 99, .profile_id = 19, .start = 6}));
  auto report = recover(journal, *device_, 100ms);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->destroyed, std::vector<std::string>{"1g.5gb at slice 0 (GPU instance " +
                                                        std::to_string(kept->id) + ")"});
  EXPECT_EQ(report->already_gone, std::vector<std::string>{"1g.5gb at slice 6 (GPU instance 99)"});
  EXPECT_TRUE(device_->instances().empty());
  EXPECT_TRUE(journal.state().instances.empty());
  EXPECT_NE(report->describe().find("destroyed 1g.5gb at slice 0"), std::string::npos);
}

}  // namespace
}  // namespace tessera::mig
