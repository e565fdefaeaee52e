#include "tessera/cli/mig_nvml_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <set>

#include "tessera/backends/nvml/nvml_mig_device.hpp"
#include "tessera/cli/stop_signals.hpp"
#include "tessera/core/file_read.hpp"
#include "tessera/core/try.hpp"
#include "tessera/mig/runtime/journal.hpp"
#include "tessera/mig/runtime/journaled_device.hpp"
#include "tessera/mig/runtime/recovery.hpp"

namespace tessera::cli {

namespace {

// An NVML failure with what to do instead where no GPU is at hand.
core::Error without_nvml(const core::Error& e) {
  return core::Error(e.domain(), e.code(),
                     fmt::format("--backend nvml: {}; `--backend sim` runs the same jobs on "
                                 "tessera's simulated MIG GPU",
                                 e.message()));
}

std::string describe_resolved(const mig::JournalState& state) {
  std::vector<std::string> done;
  for (const std::string& job : state.jobs) {
    if (auto it = state.resolved.find(job); it != state.resolved.end()) {
      done.push_back(fmt::format("{} ({})", job, it->second ? "completed" : "given up"));
    }
  }
  return done.empty() ? "none" : fmt::format("{}", fmt::join(done, ", "));
}

}  // namespace

core::Result<std::string> default_journal_path(unsigned nvml_device) {
  std::string dir;
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state != '\0') {
    dir = state;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = fmt::format("{}/.local/state", home);
  } else {
    return core::fail(core::Domain::kMig, core::Code::kInvalidArgument,
                      "neither XDG_STATE_HOME nor HOME is set: name the journal with --journal");
  }
  return fmt::format("{}/tessera/mig-gpu{}.journal", dir, nvml_device);
}

core::Result<NvmlRunResult> run_on_nvml(const NvmlRunRequest& request) {
  StopSignals stop_signals;  // before NVML can start a thread
  NvmlRunResult out;
  out.journal_path = request.journal_path;
  if (out.journal_path.empty()) {
    TESSERA_ASSIGN_OR_RETURN(out.journal_path, default_journal_path(request.nvml_device));
  }

  auto library = cuda::NvmlLibrary::open();
  if (!library) return std::unexpected(without_nvml(library.error()));
  auto device = cuda::NvmlMigDevice::open(std::shared_ptr<cuda::NvmlLibrary>(std::move(*library)),
                                          request.nvml_device);
  if (!device) return std::unexpected(without_nvml(device.error()));
  if ((*device)->geometry().gpu != request.gpu) {
    return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                       "the job file is for {}, but NVML device {} is {}; set `gpu:` in the file "
                       "or --gpu",
                       request.gpu, request.nvml_device, (*device)->geometry().gpu);
  }

  TESSERA_ASSIGN_OR_RETURN(mig::Journal journal, mig::Journal::open(out.journal_path));
  TESSERA_ASSIGN_OR_RETURN(const std::string text,
                           core::read_file(request.jobs_path, {"job file", core::Domain::kMig,
                                                               core::kMaxDocumentBytes}));
  const std::string digest = mig::digest_jobs_file(text);

  std::vector<workload::BatchJobPtr> jobs = request.jobs->jobs;
  if (journal.state().has_run) {
    const mig::JournalState earlier = journal.state();
    fmt::print(stderr, "journal {}: the run of process {} did not finish; cleaning up after it\n",
               out.journal_path, earlier.manager_pid);
    const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::nanoseconds(cuda::NvmlMigOptions{}.kill_grace));
    TESSERA_ASSIGN_OR_RETURN(const mig::RecoveryReport report,
                             mig::recover(journal, **device, grace));
    fmt::print(stderr, "journal {}: {}\n", out.journal_path, report.describe());
    const std::vector<std::string> unresolved = earlier.unresolved();
    if (earlier.jobs_digest != digest) {
      return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                         "journal '{}' holds an unfinished run of another job file (or this one "
                         "before it changed), whose jobs {} did not finish; run that file again "
                         "to finish them, or remove the journal to drop them",
                         out.journal_path, fmt::join(unresolved, ", "));
    }
    const std::set<std::string> wanted(unresolved.begin(), unresolved.end());
    std::erase_if(jobs, [&](const workload::BatchJobPtr& j) { return !wanted.contains(j->name); });
    fmt::print(stderr, "journal {}: finished before: {}; running the other {}\n", out.journal_path,
               describe_resolved(earlier), jobs.size());
    TESSERA_TRY(journal.resume());
  } else {
    std::vector<std::string> names;
    for (const auto& j : jobs) names.push_back(j->name);
    TESSERA_TRY(journal.begin(digest, names));
  }

  mig::ManagerOptions options = request.options;
  options.stop = [&]() -> std::optional<std::string> {
    if (out.stop_signal == 0) out.stop_signal = stop_signals.take_pending();
    if (out.stop_signal == 0) return std::nullopt;
    return std::string(StopSignals::name(out.stop_signal));
  };
  options.on_resolved = [&journal](const mig::JobOutcome& o) {
    if (auto st = journal.job_resolved(o.name, o.completed); !st) {
      fmt::print(stderr, "warning: {}\n", st.error().message());
    }
  };
  mig::JournaledMigDevice journaled(**device, journal);
  TESSERA_ASSIGN_OR_RETURN(out.result, mig::run_jobs(journaled, jobs, options, request.progress));
  if (out.result.stopped.empty()) TESSERA_TRY(journal.finish());
  return out;
}

}  // namespace tessera::cli
