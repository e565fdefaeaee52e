#pragma once
// What no MIG policy can beat on a mix of jobs: a least makespan, from a relaxation that keeps
// each job's time and the GPU's slices but not which job runs where.
//
// A job runs on one instance of one profile p (the fastest that holds its peak memory, or a
// slower one), after its process starts. Alone, its work takes t_p and holds the instance for t_p.
// Beside a partner under a sharing mode, each unit of its work takes s_a units of time and holds
// h = 1/(1/s_a + 1/s_b) of the instance (the pair does 1/s_a + 1/s_b units of work per unit of
// time between them). A run that is partly alone and partly beside partners lies on the convex
// hull of those points, so at a makespan M each job holds at least the least instance-time on
// that hull among the runs that still end by M. M is a bound only if the jobs' least holds fit:
//   - in compute slice-time (7 slices) and memory slice-time (8), from the first instance made;
//   - in instance-time, at most 7 instances, made one after another.
// With one job to an instance, a process start holds its instance. Beside another job it may
// overlap the other's run, so it counts nothing there; but no job's work begins before the first
// instance is made and a job has started on it, so the slice-time and instance-time count from
// then. Destroys, waiting, worse choices and partners that never run together only add to the
// real makespan.
//
// Those terms give each job its least hold on its own. A linear program
// (internal/mig_bound_program.hpp, solved by GLPK) keeps which jobs run together and when: a pair's
// time serves both, every start takes its instance's time (beside at most one job working alone
// or another start), and jobs submitted later use only the slices from then on. It binds in most
// mixes; the closed-form terms stand where it is larger than a plan should solve.

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::experiment {

struct MigBound {
  core::Nanos makespan = 0;
  double jobs_per_hour = 0;
  std::string binding;  // which condition sets it, in words
};

struct MigBoundCosts {
  core::Nanos create_time = 0;  // of one instance; the driver makes them one at a time
  core::Nanos start_time = 0;   // a job's process start
  // Of one instance; the bound counts none (a destroy only adds time), mig_optimum's search does.
  core::Nanos destroy_time = 0;
};

// The bound for `jobs` on `geometry`, with `jobs_per_instance` (1 or 2) jobs to an instance, and
// jobs' times and pairs' slowdowns from `model`. Pairs whose peaks together exceed an instance
// never share it. Jobs no profile holds are left out (every policy gives them up).
core::Result<MigBound> mig_bound(const std::vector<workload::BatchJobPtr>& jobs,
                                 const hw::MigGeometry& geometry, sim::SliceCostModel& model,
                                 const MigBoundCosts& costs, int jobs_per_instance);

}  // namespace tessera::experiment
