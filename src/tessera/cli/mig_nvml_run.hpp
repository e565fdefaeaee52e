#pragma once
// `tessera mig run --backend nvml`: the manager on a real MIG GPU, with its journal
// (mig/runtime/journal.hpp) and SIGINT/SIGTERM. A run that finds its journal unfinished first
// cleans up after the run that left it (mig::recover) and, for the same job file, runs only the
// jobs that had not finished; a signal stops the jobs, destroys the instances this run created
// and keeps the journal, so the same command later finishes the rest.

#include <string>

#include "tessera/core/error.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"
#include "tessera/mig/runtime/manager.hpp"

namespace tessera::cli {

struct NvmlRunRequest {
  std::string jobs_path;
  const mig::JobsFile* jobs = nullptr;
  std::string gpu;  // the catalog GPU the job file is for
  unsigned nvml_device = 0;
  std::string journal_path;  // empty: default_journal_path(nvml_device)
  mig::ManagerOptions options;
  mig::ProgressFn progress;
};

struct NvmlRunResult {
  mig::MigRunResult result;  // this run's jobs
  int stop_signal = 0;       // SIGINT or SIGTERM when one stopped it
  std::string journal_path;
};

// $XDG_STATE_HOME/tessera/mig-gpu<N>.journal, else ~/.local/state/tessera/...; an error when
// neither variable is set.
core::Result<std::string> default_journal_path(unsigned nvml_device);

// Says on stderr, as it goes, what an earlier run left and what of it is run again.
core::Result<NvmlRunResult> run_on_nvml(const NvmlRunRequest& request);

}  // namespace tessera::cli
