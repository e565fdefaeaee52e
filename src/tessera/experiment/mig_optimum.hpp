#pragma once
// The best schedule a MIG policy can make on a small mix of jobs submitted together: a yardstick
// for time-fit that, unlike mig_bound's relaxation, a policy can reach.
//
// mig::search_schedules (mig/policy/schedule_search.hpp) tries every decision a policy run by
// tessera's MIG manager can make when the jobs are submitted and whenever a job ends, timed as
// time-fit predicts. Here each job's times come from the kernel model on every profile that holds
// its true peak memory, and every pair's slowdowns from the model's co-run on every profile that
// holds both.
//
// The result is an optimum over those schedules in that arithmetic: a policy that starts jobs at
// other moments, or runs three to an instance, is outside it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/experiment/mig_bound.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::experiment {

struct MigOptimumLimits {
  // Mixes with more jobs are not searched: the schedules grow with the jobs' factorial. At most
  // 31 in any case.
  std::size_t max_jobs = 6;
  // Partial schedules examined before the search stops with the best found so far.
  std::int64_t max_steps = 5'000'000;
};

struct MigOptimum {
  // Why nothing was searched ("7 jobs, more than 6"); empty where the search ran, and the rest
  // holds its result.
  std::string not_searched;
  core::Nanos makespan = 0;
  double jobs_per_hour = 0;
  bool complete = false;   // every schedule was searched: no schedule ends sooner
  std::int64_t steps = 0;  // partial schedules examined
  // The best schedule's decisions in order, each "12.161 s: llama-short beside resnet50-b64 on
  // 7g.40gb@0" (times from the submission).
  std::vector<std::string> decisions;
};

// The optimum for `jobs` on `geometry` with `jobs_per_instance` (1 or 2) jobs to an instance,
// timed by `model`, with `costs`' create, destroy and start times. Nothing is searched where the
// mix is out of reach: more than `limits.max_jobs` jobs, or jobs submitted at different times.
// Jobs no profile holds are left out (every policy gives them up).
core::Result<MigOptimum> mig_optimum(const std::vector<workload::BatchJobPtr>& jobs,
                                     const hw::MigGeometry& geometry, sim::SliceCostModel& model,
                                     const MigBoundCosts& costs, int jobs_per_instance,
                                     const MigOptimumLimits& limits = {});

}  // namespace tessera::experiment
