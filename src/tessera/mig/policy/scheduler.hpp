#pragma once
// The MIG job scheduler's policy (MIGM §3.4, schemes A and B, and two baselines): which queued
// jobs start now, on which instance, and which jobs can never run on this GPU. Pure: the layout
// space, the current state, the busy instances and the queue in; named decisions out. No clock,
// no device; the same input gives the same decisions.
//
// Decisions are meant to be carried out in order: each StartDecision's plan applies to the state
// the previous ones leave (its instance counts as busy for the ones after it).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/reconfig_planner.hpp"
#include "tessera/mig/policy/scheme.hpp"

namespace tessera::mig {

struct QueuedJob {
  std::size_t job = 0;  // the caller's index of the job (the manager: submission order)
  std::string name;
  std::int64_t need_bytes = 0;  // the memory the job must get (0: unknown, any profile fits)
  // After an out-of-memory failure: no profile ordered before this one (profile_order) is given.
  std::optional<int> min_profile_id;
  core::Nanos submitted = 0;
  bool restart = false;  // ran before and was requeued: goes to the front of the queue
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

// "52.0 GiB"
std::string format_gib(std::int64_t bytes);

}  // namespace tessera::mig
