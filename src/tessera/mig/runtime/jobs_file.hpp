#pragma once
// JOBS.yaml: the GPU, the scheme and the jobs `tessera mig plan|run` and the mig-* experiments
// take. Jobs are built-in kinds (a Rodinia-like scientific kernel, a training model, an LLM
// serving a growing context) or custom ones with an explicit memory trajectory; see
// docs/mig.md for the format. Errors name the file, line and field.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/mig/policy/memory_estimate.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::mig {

struct JobsFile {
  std::string gpu = "a100-40gb";  // hw::find_mig_geometry name
  std::string scheme = "B";       // parse_scheme text; the command line may override it
  std::uint64_t seed = 1;         // noise in simulated memory samples
  std::vector<workload::BatchJobPtr> jobs;
  // By job name, the parts of the static estimate of each job built from a model (training,
  // inference), as `tessera mig plan` shows them.
  std::map<std::string, MemoryBreakdown> breakdowns;
};

core::Result<JobsFile> load_jobs_file(const std::string& path);
core::Result<JobsFile> parse_jobs(std::string_view text, std::string source_name);

}  // namespace tessera::mig
