#pragma once
// A MIG job mix drawn from public cluster traces (../shared/data/cluster_traces): job durations
// from the Philly runtime distribution (Microsoft, 83,152 jobs with a runtime), arrivals from
// consecutive single-GPU pods of the Alibaba 2023 GPU trace (openb), whose creation times are
// the only per-job arrivals among the data. Neither trace says what a job ran, so each is one of
// tessera's training jobs (ResNet-50 or BERT-base at one of three batches, drawn with the seed)
// with as many iterations as make its drawn duration on the whole GPU (MIG off). Durations are
// drawn from the Philly jobs of at most two hours (86% of them), so a mix simulates in seconds;
// the longer tail would be one job holding the GPU for days.

#include <cstdint>
#include <string>

#include "tessera/core/error.hpp"

namespace tessera::experiment {

struct TraceMixOptions {
  int jobs = 12;
  std::uint64_t seed = 1;
  std::string gpu = "h100";
};

// The mix as JOBS.yaml text (mig/runtime/jobs_file.hpp), with a comment naming its sources.
core::Result<std::string> trace_mix_text(const TraceMixOptions& options);

}  // namespace tessera::experiment
