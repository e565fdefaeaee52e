#pragma once
// tessera's MIG policy, time-fit. MIGM gives every job the smallest slice its memory fits; a job
// whose kernels scale with SMs or bandwidth then runs several times longer there, and the queue
// finishes later than on the whole GPU. Time-fit sizes slices by time instead:
//
// - Each job's run time on each profile that fits its memory is predicted (QueuedJob::times; the
//   manager asks the simulated GPU's kernel model for it).
// - Every fully configured layout that keeps the busy instances is tried: the queue is list-
//   scheduled on it (longest job first, each on the instance where it is predicted to finish
//   first), with the instances it must create ready only after the destroys and creates it needs
//   and busy ones only when their jobs are predicted to end. The layout that finishes the queue
//   first wins; then the one with the lowest sum of finish times, the fewest instances changed
//   and the highest fcr of the state the starts leave (the most layouts still reachable).
// - Only the starts due now are decided: an instance is made when a job starts on it, and a job
//   that would finish sooner by waiting for a busy larger instance waits. The plan is redone at
//   every event.
// - Ageing: restarted jobs and jobs waiting longer than TimeFitOptions::ageing are scheduled
//   before the rest, oldest first; when one of them fits no instance beside the busy ones, nothing
//   new starts until it does, so a job needing a large slice is not starved by small ones.
// - Sharing (SchedulerInput::jobs_per_instance 2, with the pairs' slowdowns): a job may also join
//   an instance's last job while that runs alone, or a pair's survivor once the other has ended,
//   both slowed while both run (co_run.hpp). Each
//   order on each layout is scheduled under two join rules (the job's end plus the delay it
//   causes, or its own end, must beat its end alone), the better outcome kept; a join due now is
//   a PlanKind::kShare start. One more order alternates the longest job left and the shortest, so
//   that short jobs come up while a long one runs and can join it.
//
// Pure, like every scheme: the same input gives the same decisions.

#include "tessera/mig/policy/scheduler.hpp"

namespace tessera::mig {

Decisions schedule_time_fit(const SchedulerInput& in);

}  // namespace tessera::mig
