#pragma once
// The MIG job scheduler's policy (MIGM §3.4, schemes A and B, two baselines, and tessera's own,
// time-fit, in time_fit.hpp): which queued jobs start now, on which instance, and which jobs can
// never run on this GPU. Pure: the layout
// space, the current state, the busy instances and the queue in; named decisions out. No clock,
// no device; the same input gives the same decisions.
//
// Decisions are meant to be carried out in order: each StartDecision's plan applies to the state
// the previous ones leave (its instance counts as busy for the ones after it).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/co_run.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/reconfig_planner.hpp"
#include "tessera/mig/policy/scheme.hpp"

namespace tessera::mig {

// A job's predicted run time on instances of one profile (process start excluded).
struct ProfileTime {
  int profile_id = 0;
  core::Nanos time = 0;
};

struct QueuedJob {
  std::size_t job = 0;  // the caller's index of the job (the manager: submission order)
  std::string name;
  std::int64_t need_bytes = 0;  // the memory the job must get (0: unknown, any profile fits)
  // After an out-of-memory failure: no profile ordered before this one (profile_order) is given.
  std::optional<int> min_profile_id;
  core::Nanos submitted = 0;
  bool restart = false;  // ran before and was requeued: goes to the front of the queue
  // Time-fit: its predicted run time on each profile it may get (a profile missing here is
  // predicted from the others, as if the job scaled with compute slices).
  std::vector<ProfileTime> times;
  // Time-fit sharing: jobs of one class run the same work, and SchedulerInput::co_runs is keyed
  // by class.
  std::size_t work_class = 0;
};

// What time-fit weighs against a reconfiguration's gain, and when a job has waited too long.
// The three times default to the simulated MIG GPU's (sim::SimMigOptions, ASSUMPTION values
// named in docs/mig.md); a real GPU's are the same order of magnitude.
struct TimeFitOptions {
  core::Nanos create_time = core::seconds(1);
  core::Nanos destroy_time = core::millis(500);
  core::Nanos start_time = core::seconds(2);  // a job's process start and CUDA context
  // A job that has waited this long is served before every job that has not (ASSUMPTION: 30
  // minutes, a few times the median job of the Alibaba 2023 GPU trace, 655 s; an option).
  core::Nanos ageing = core::seconds(30 * 60);
};

// A job running on a busy instance, for time-fit's sharing.
struct RunningJob {
  std::size_t job = 0;          // the caller's index (as QueuedJob::job)
  std::size_t work_class = 0;   // as QueuedJob::work_class
  std::int64_t need_bytes = 0;  // the memory it may reach
  ShareTerm term;               // when its work begins and how much it has left, alone
};

struct StartDecision {
  std::size_t job = 0;
  ReconfigPlan plan;
};

struct GiveUp {
  std::size_t job = 0;
  std::string reason;  // "needs 52.0 GiB; the largest instance, 7g.40gb, has 40 GiB"
};

struct SchedulerInput {
  const LayoutSpace* space = nullptr;
  StateId current = 0;
  std::set<Placement> busy;      // instances that run a job
  std::vector<QueuedJob> queue;  // any order; the scheme orders it
  Scheme scheme = Scheme::kB;
  Layout static_layout;  // Scheme::kStatic
  // Time-fit only: the time now; when instances are predicted to take a job (busy ones when their
  // job ends, new ones when they are ready; absent: now); when the reconfigurations under way are
  // predicted to end (the driver makes one at a time); and the costs it weighs.
  core::Nanos now = 0;
  std::map<Placement, core::Nanos> free_at;
  core::Nanos reconfig_free_at = 0;
  TimeFitOptions time_fit;
  // Time-fit sharing an instance between two jobs: how many jobs an instance may run (1: none
  // share), the jobs each busy instance runs, and the pairs' slowdowns (a pair or profile
  // missing from the table never shares).
  int jobs_per_instance = 1;
  std::map<Placement, std::vector<RunningJob>> running;
  const CoRunTable* co_runs = nullptr;
};

struct Decisions {
  std::vector<GiveUp> give_ups;
  std::vector<StartDecision> starts;  // in the order they must be carried out
};

Decisions schedule(const SchedulerInput& in);

// The space's profiles from smallest to largest: by memory slices, then compute slices (the
// order hw::MigGeometry::smallest_with_memory uses).
std::vector<const hw::MigProfile*> profile_order(const LayoutSpace& space);

// The smallest of the space's profiles with strictly more memory than `profile_id`; nullptr when
// none has (it is the largest).
const hw::MigProfile* next_larger_profile(const LayoutSpace& space, int profile_id);

// The profile a job gets: the smallest of the space's profiles with at least `need_bytes` of
// memory and not ordered before `min_profile_id`; nullptr when none qualifies.
const hw::MigProfile* profile_for(const LayoutSpace& space, std::int64_t need_bytes,
                                  std::optional<int> min_profile_id);

// Why no profile of the space can be given to `q` ("needs 52.0 GiB; the largest instance, ...").
std::string give_up_reason(const LayoutSpace& space, const QueuedJob& q);

// "52.0 GiB"
std::string format_gib(std::int64_t bytes);

}  // namespace tessera::mig
