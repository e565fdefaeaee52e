#pragma once
// The MIG manager's journal on a real GPU: what a run has accepted and what it has left on the
// machine (GPU instances it created, job processes it started), one JSON record per line, each
// written and fsync'd before the manager goes on. A manager that dies, even by SIGKILL, leaves
// it behind; the next run on the journal (mig::recover) stops those processes, destroys those
// instances and runs the jobs that had not finished, and only those.
//
// The file is locked (flock) while a run holds it, so two managers never share one; the lock goes
// with the process however it ends. A record cut short by a crash is the last line, without its
// newline: it is dropped on reading (it was never acknowledged). Any other malformed line is an
// error naming the file and line.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/mig_device.hpp"

namespace tessera::mig {

struct JournalInstance {
  device::MigInstanceId id = 0;
  int profile_id = 0;
  int start = 0;
};

struct JournalProcess {
  device::MigInstanceId instance = 0;
  device::JobProcess process;
};

// What the records say, replayed.
struct JournalState {
  bool has_run = false;                  // a run began and has not been ended (Journal::finish)
  std::string jobs_digest;               // of the job file the run was for (digest_jobs_file)
  std::string boot_id;                   // core::boot_id() when the run began or resumed
  std::int64_t manager_pid = 0;          // the process that last began or resumed the run
  std::vector<std::string> jobs;         // accepted, in the file's order
  std::map<std::string, bool> resolved;  // job -> completed; ended for good
  std::map<device::MigInstanceId, JournalInstance> instances;  // created, not destroyed
  std::map<std::string, JournalProcess> processes;             // job -> started, not exited

  // Accepted jobs not yet resolved, in order.
  std::vector<std::string> unresolved() const;
};

// A stable digest of a job file's text (FNV-1a, 64 bits, as 16 hex digits): a resumed run must be
// for the same file.
std::string digest_jobs_file(std::string_view text);

class Journal {
 public:
  // Opens `path` (creating it and its directory), takes its lock and reads it. Fails when another
  // process holds it, naming that process.
  static core::Result<Journal> open(const std::string& path);
  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  const std::string& path() const { return path_; }
  const JournalState& state() const { return state_; }

  // A new run of `jobs` for the job file of `digest`: what the journal held before is dropped.
  core::Status begin(const std::string& digest, const std::vector<std::string>& jobs);
  // The same run again, in this process (after mig::recover).
  core::Status resume();
  core::Status instance_created(const JournalInstance& instance);
  core::Status instance_destroyed(device::MigInstanceId id);
  core::Status job_started(const std::string& job, device::MigInstanceId instance,
                           const std::optional<device::JobProcess>& process);
  core::Status job_exited(const std::string& job);
  core::Status job_resolved(const std::string& job, bool completed);
  // The run is over and left nothing behind: the file is removed (the lock is kept until this
  // object goes).
  core::Status finish();

 private:
  Journal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  core::Status load();
  // Applies one record to state_; false if it is not a record this journal writes.
  bool apply(const std::string& line);
  core::Status append(const std::string& line);

  std::string path_;
  int fd_ = -1;
  JournalState state_;
};

}  // namespace tessera::mig
