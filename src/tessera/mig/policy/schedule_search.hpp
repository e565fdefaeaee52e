#pragma once
// Every schedule a MIG policy deciding at job ends can make from a given moment, searched by
// branch and bound for the one that ends first.
//
// A policy run by tessera's MIG manager decides now and again whenever a job ends: which queued
// jobs start, each on an instance kept, one made (after destroying any idle instances: the
// manager destroys only with a create) or, with two jobs to an instance, beside an instance's
// one running job. The search tries every such
// decision at every such moment, in time-fit's arithmetic: each job's run on each profile it may
// get, a pair slowed by its slowdowns while both work (co_run.hpp), instances made and destroyed
// one at a time, a process start per job. A partial schedule is dropped when its jobs cannot end
// before the best found: by each queued job's fastest run after a start, each running job's
// predicted end (a partner joining later only slows it), or the compute and memory slice-time the
// work left needs when every instance runs its most productive pair.
//
// Pure: the same input gives the same schedule; a step budget, not a clock, bounds it. It starts
// from any moment (running jobs, idle instances, the driver busy), as a policy would call it;
// experiment::mig_optimum runs it from the submission of a mix, as a yardstick for time-fit.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/mig/policy/co_run.hpp"
#include "tessera/mig/policy/layout_space.hpp"

namespace tessera::mig {

struct SearchJob {
  std::size_t work_class = 0;        // its pairs' slowdowns are looked up by class
  std::int64_t need_bytes = 0;       // two jobs share an instance only where both fit its memory
  std::map<int, core::Nanos> times;  // by profile ID: its run alone on each profile it may get
};

struct SearchRunning {
  std::size_t work_class = 0;
  std::int64_t need_bytes = 0;
  ShareTerm term;  // when its work begins and how much it has left, alone
};

struct SearchInstance {
  Placement placement;
  core::Nanos ready = 0;            // made by then
  std::vector<SearchRunning> runs;  // at most two
};

// The moment the search starts from.
struct SearchFrom {
  core::Nanos now = 0;
  core::Nanos driver_free = 0;  // when the driver has carried out the reconfigurations under way
  StateId layout = 0;
  std::vector<SearchInstance> instances;
};

struct SearchCosts {
  core::Nanos create_time = 0;
  core::Nanos destroy_time = 0;
  core::Nanos start_time = 0;
};

struct SearchLimits {
  std::int64_t max_steps = 5'000'000;  // partial schedules examined before the search stops
};

struct SearchStep {
  enum class Kind { kDestroy, kStart, kMake, kJoin };
  Kind kind = Kind::kStart;
  std::size_t round = 0;  // 0: now; k: at the k-th job end after now
  core::Nanos at = 0;
  Placement placement;
  std::size_t job = 0;                // the queued job that starts (kStart, kMake, kJoin)
  std::optional<std::size_t> beside;  // kJoin: the queued job it joins (none: one running now)
};

struct SearchResult {
  // The least makespan (none: the search stopped before any schedule ended), and of the
  // schedules that end then, the least sum of the jobs' ends (those running at the start too).
  std::optional<core::Nanos> makespan;
  core::Nanos sum = 0;
  bool complete = false;  // every schedule was searched
  std::int64_t steps = 0;
  std::vector<SearchStep> schedule;  // the best schedule's decisions, in order
};

// The best schedule for `queued` from `from` with `jobs_per_instance` (1 or 2) jobs to an
// instance and pairs' slowdowns from `co_runs` (nullptr: none share). No schedule (and nothing
// searched) for more than 31 queued jobs or one with no profile in `times`.
SearchResult search_schedules(const LayoutSpace& space, const std::vector<SearchJob>& queued,
                              const SearchFrom& from, const CoRunTable* co_runs,
                              int jobs_per_instance, const SearchCosts& costs,
                              const SearchLimits& limits);

}  // namespace tessera::mig
