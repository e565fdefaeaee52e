#include "tessera/mig/runtime/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "tessera/core/config.hpp"
#include "tessera/core/file_read.hpp"
#include "tessera/core/process_table.hpp"
#include "tessera/core/try.hpp"
#include "tessera/core/write_all.hpp"

namespace tessera::mig {

namespace {

using nlohmann::json;

// A journal holds a few records per job and instance; one this large is not a journal.
constexpr std::uint64_t kMaxJournalBytes = 16 * core::kMiB;

core::Error system_error(const std::string& path, std::string_view what) {
  return core::Error(core::Domain::kMig, core::Code::kFailedPrecondition,
                     fmt::format("journal '{}': {}: {}", path, what, std::strerror(errno)));
}

}  // namespace

std::vector<std::string> JournalState::unresolved() const {
  std::vector<std::string> out;
  for (const std::string& job : jobs) {
    if (!resolved.contains(job)) out.push_back(job);
  }
  return out;
}

std::string digest_jobs_file(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

core::Result<Journal> Journal::open(const std::string& path) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) {
    return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                       "journal '{}': cannot create its directory: {}", path, ec.message());
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(system_error(path, "cannot open it"));
  Journal journal(path, fd);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return std::unexpected(system_error(path, "cannot lock it"));
    // Read without the lock, only to name the holder.
    std::string holder = "another process";
    if (journal.load() && journal.state_.manager_pid > 0) {
      holder = fmt::format("process {}", journal.state_.manager_pid);
    }
    return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                       "journal '{}' is in use by {} (another `tessera mig run` on this GPU?); "
                       "one manager per GPU and journal",
                       path, holder);
  }
  TESSERA_TRY(journal.load());
  return journal;
}

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      state_(std::move(other.state_)) {}

Journal& Journal::operator=(Journal&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    state_ = std::move(other.state_);
  }
  return *this;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

core::Status Journal::load() {
  state_ = {};
  TESSERA_ASSIGN_OR_RETURN(
      const std::string text,
      core::read_file(path_, {"MIG journal", core::Domain::kMig, kMaxJournalBytes}));
  std::size_t at = 0;
  std::size_t complete = 0;  // bytes up to the end of the last whole line
  int line = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // cut short by a crash: never acknowledged
    ++line;
    const std::string record = text.substr(at, end - at);
    if (!record.empty() && !apply(record)) {
      return core::failf(core::Domain::kMig, core::Code::kParse,
                         "journal '{}' line {}: not a journal record: {}; check that no job "
                         "process or MIG instance of an earlier run is left, then remove the file",
                         path_, line, core::quote_value(record));
    }
    at = end + 1;
    complete = at;
  }
  if (complete < text.size() && fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(complete)) != 0) {
    return std::unexpected(system_error(path_, "cannot drop its torn last record"));
  }
  return {};
}

bool Journal::apply(const std::string& line) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  try {
    const std::string event = j.at("event").get<std::string>();
    if (event == "begin") {
      state_ = {};
      state_.has_run = true;
      state_.jobs_digest = j.at("digest").get<std::string>();
      state_.jobs = j.at("jobs").get<std::vector<std::string>>();
      state_.boot_id = j.at("boot_id").get<std::string>();
      state_.manager_pid = j.at("pid").get<std::int64_t>();
    } else if (event == "resume") {
      state_.boot_id = j.at("boot_id").get<std::string>();
      state_.manager_pid = j.at("pid").get<std::int64_t>();
    } else if (event == "instance") {
      const JournalInstance inst{.id = j.at("id").get<device::MigInstanceId>(),
                                 .profile_id = j.at("profile_id").get<int>(),
                                 .start = j.at("start").get<int>()};
      state_.instances[inst.id] = inst;
    } else if (event == "instance_destroyed") {
      state_.instances.erase(j.at("id").get<device::MigInstanceId>());
    } else if (event == "job_started") {
      JournalProcess p{.instance = j.at("instance").get<device::MigInstanceId>(), .process = {}};
      if (j.contains("process_group")) {
        p.process = {.process_group = j.at("process_group").get<std::int64_t>(),
                     .start_ticks = j.at("start_ticks").get<std::uint64_t>()};
      }
      state_.processes[j.at("job").get<std::string>()] = p;
    } else if (event == "job_exited") {
      state_.processes.erase(j.at("job").get<std::string>());
    } else if (event == "job_resolved") {
      state_.resolved[j.at("job").get<std::string>()] = j.at("completed").get<bool>();
    } else {
      return false;
    }
  } catch (const json::exception&) {
    return false;
  }
  return true;
}

core::Status Journal::append(const std::string& line) {
  if (!core::write_all(fd_, line + "\n")) {
    return std::unexpected(system_error(path_, "cannot write a record"));
  }
  if (fdatasync(fd_) != 0) return std::unexpected(system_error(path_, "cannot sync it"));
  if (!apply(line)) {
    return core::failf(core::Domain::kMig, core::Code::kInternal,
                       "journal '{}': wrote a record it cannot read back: {}", path_, line);
  }
  return {};
}

core::Status Journal::begin(const std::string& digest, const std::vector<std::string>& jobs) {
  if (ftruncate(fd_, 0) != 0) {  // O_APPEND: the next write lands at the new end
    return std::unexpected(system_error(path_, "cannot start it anew"));
  }
  state_ = {};
  return append(json{{"event", "begin"},
                     {"digest", digest},
                     {"jobs", jobs},
                     {"boot_id", core::boot_id()},
                     {"pid", static_cast<std::int64_t>(getpid())}}
                    .dump());
}

core::Status Journal::resume() {
  return append(json{{"event", "resume"},
                     {"boot_id", core::boot_id()},
                     {"pid", static_cast<std::int64_t>(getpid())}}
                    .dump());
}

core::Status Journal::instance_created(const JournalInstance& instance) {
  return append(json{{"event", "instance"},
                     {"id", instance.id},
                     {"profile_id", instance.profile_id},
                     {"start", instance.start}}
                    .dump());
}

core::Status Journal::instance_destroyed(device::MigInstanceId id) {
  return append(json{{"event", "instance_destroyed"}, {"id", id}}.dump());
}

core::Status Journal::job_started(const std::string& job, device::MigInstanceId instance,
                                  const std::optional<device::JobProcess>& process) {
  json j{{"event", "job_started"}, {"job", job}, {"instance", instance}};
  if (process) {
    j["process_group"] = process->process_group;
    j["start_ticks"] = process->start_ticks;
  }
  return append(j.dump());
}

core::Status Journal::job_exited(const std::string& job) {
  return append(json{{"event", "job_exited"}, {"job", job}}.dump());
}

core::Status Journal::job_resolved(const std::string& job, bool completed) {
  return append(json{{"event", "job_resolved"}, {"job", job}, {"completed", completed}}.dump());
}

core::Status Journal::finish() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return std::unexpected(system_error(path_, "cannot remove it"));
  }
  state_ = {};
  return {};
}

}  // namespace tessera::mig
