#pragma once
// Two jobs sharing one MIG instance, as time-fit predicts them: each job's work is its run time
// alone on the instance; it runs alone until the other begins, both run slowed by their pair's
// slowdowns while both run, and the one left runs alone again. Pure arithmetic, shared by the
// policy and the manager's predictions.

#include <cstddef>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

#include "tessera/core/time.hpp"

namespace tessera::mig {

// Two jobs' iteration times side by side on one profile over their times alone (>= 1 when they
// compete; sim::SliceCostModel::co_run measures them).
struct Slowdowns {
  double first = 1;   // of the job of the lower class
  double second = 1;  // of the other
};

// A pair of work classes on a profile: the lower class, the higher (equal for two jobs of one
// class), the profile ID. Jobs of one class run the same work (QueuedJob::work_class), so the
// table grows with the kinds of work, not with the jobs.
struct CoRunKey {
  std::size_t first = 0;
  std::size_t second = 0;
  int profile_id = 0;
  bool operator==(const CoRunKey&) const = default;
};
struct CoRunKeyHash {
  std::size_t operator()(const CoRunKey& k) const {
    // The time-fit list schedule looks pairs up hundreds of thousands of times a decision with a
    // hundred jobs queued; a hash keeps that flat.
    return std::hash<std::size_t>{}((k.first * 1'000'003 + k.second) * 131 +
                                    static_cast<std::size_t>(k.profile_id + 1));
  }
};
using CoRunTable = std::unordered_map<CoRunKey, Slowdowns, CoRunKeyHash>;

// The slowdowns of a job of class `a` beside one of class `b` and the other way round, on
// `profile_id`; nullopt when the table has no entry (the pair may not share that profile).
std::optional<std::pair<double, double>> slowdowns(const CoRunTable& table, std::size_t a,
                                                   std::size_t b, int profile_id);

// One job's part in a share: when its work begins (after its process start), how much work
// alone it has left from then, and its slowdown beside the other.
struct ShareTerm {
  core::Nanos begins = 0;
  core::Nanos work = 0;
  double slowdown = 1;
};

// When each of the two ends.
std::pair<core::Nanos, core::Nanos> shared_ends(const ShareTerm& a, const ShareTerm& b);

// The work `a` has left at `at` (>= a.begins), having shared the instance with `b` until then.
core::Nanos work_left_at(const ShareTerm& a, const ShareTerm& b, core::Nanos at);

// A job with `work` alone joining `partner`, which has run alone until `now`: the partner's term
// from now and the joiner's, whose work begins after its process start (`start_time`) and not
// before the partner's, slowed by `slowdowns` (the partner's, the joiner's).
std::pair<ShareTerm, ShareTerm> join(ShareTerm partner, core::Nanos now, core::Nanos start_time,
                                     core::Nanos work, std::pair<double, double> slowdowns);

// Of two jobs sharing an instance, `a`'s term alone from `at`, when `b` ends: its work left, from
// then or, still starting, from when its work begins.
ShareTerm survivor(const ShareTerm& a, const ShareTerm& b, core::Nanos at);

}  // namespace tessera::mig
