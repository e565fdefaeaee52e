#include "tessera/experiment/mig_optimum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/try.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/schedule_search.hpp"

namespace tessera::experiment {
namespace {

std::string describe(const mig::SearchStep& d, core::Nanos submitted,
                     const std::vector<std::string>& names, const hw::MigGeometry& geometry) {
  const std::string where =
      fmt::format("{}@{}", geometry.find(d.placement.profile_id)->name, d.placement.start);
  const std::string what = [&] {
    switch (d.kind) {
      case mig::SearchStep::Kind::kStart: return fmt::format("{} on {}", names[d.job], where);
      case mig::SearchStep::Kind::kMake: return fmt::format("{} on {} (made)", names[d.job], where);
      case mig::SearchStep::Kind::kJoin:
        return fmt::format("{} beside {} on {}", names[d.job], names[d.beside.value_or(d.job)],
                           where);
      case mig::SearchStep::Kind::kDestroy: return fmt::format("destroy {}", where);
    }
    return std::string();
  }();
  return fmt::format("{:.3f} s: {}", core::to_seconds(d.at - submitted), what);
}

}  // namespace

core::Result<MigOptimum> mig_optimum(const std::vector<workload::BatchJobPtr>& jobs,
                                     const hw::MigGeometry& geometry, sim::SliceCostModel& model,
                                     const MigBoundCosts& costs, int jobs_per_instance,
                                     const MigOptimumLimits& limits) {
  const auto skipped = [](std::string why) {
    MigOptimum out;
    out.not_searched = std::move(why);
    return out;
  };
  constexpr std::size_t kMaxJobs = 31;  // the search's queue is a bit mask
  const std::size_t max_jobs = std::min(limits.max_jobs, kMaxJobs);
  if (jobs.size() > max_jobs) {
    return skipped(fmt::format("{} jobs, more than {}", jobs.size(), max_jobs));
  }
  if (jobs.empty()) return skipped("no jobs");
  const core::Nanos submitted = jobs.front()->submit_time;
  for (const auto& job : jobs) {
    if (job->submit_time != submitted) return skipped("jobs submitted at different times");
  }
  TESSERA_ASSIGN_OR_RETURN(mig::LayoutSpace space, mig::LayoutSpace::build(geometry));
  // Each job its own class; its true peak decides what holds it, alone and beside another.
  std::vector<mig::SearchJob> held;
  std::vector<const workload::BatchJob*> batch;
  std::vector<std::string> names;
  for (const auto& job : jobs) {
    mig::SearchJob j{.work_class = held.size(),
                     .need_bytes = job->memory.peak_reserved(job->iterations),
                     .times = {}};
    for (const int id : space.profile_ids()) {
      const hw::MigProfile& p = *geometry.find(id);
      if (p.memory_bytes < j.need_bytes) continue;
      TESSERA_ASSIGN_OR_RETURN(const core::Nanos t, model.job_time(*job, p));
      j.times[id] = t;
    }
    if (j.times.empty()) continue;  // every policy gives it up
    held.push_back(std::move(j));
    batch.push_back(job.get());
    names.push_back(job->name);
  }
  if (held.empty()) return skipped("no job fits any profile");
  mig::CoRunTable pairs;
  for (std::size_t a = 0; jobs_per_instance > 1 && a < held.size(); ++a) {
    for (std::size_t b = a + 1; b < held.size(); ++b) {
      for (const int id : space.profile_ids()) {
        const hw::MigProfile& p = *geometry.find(id);
        if (held[a].need_bytes + held[b].need_bytes > p.memory_bytes) continue;
        // A pair the model cannot time never shares (the manager is told the same).
        const auto c = model.co_run(*batch[a], *batch[b], p);
        if (c) pairs[{a, b, id}] = {.first = c->slowdown_a, .second = c->slowdown_b};
      }
    }
  }

  const mig::SearchResult found = mig::search_schedules(
      space, held,
      {.now = submitted, .driver_free = submitted, .layout = space.empty_state(), .instances = {}},
      &pairs, jobs_per_instance,
      {.create_time = costs.create_time,
       .destroy_time = costs.destroy_time,
       .start_time = costs.start_time},
      {.max_steps = limits.max_steps});
  if (!found.makespan) {
    return skipped(
        fmt::format("stopped after {} steps, before any schedule ended", limits.max_steps));
  }
  MigOptimum out;
  out.makespan = *found.makespan - submitted;
  out.jobs_per_hour = out.makespan > 0
                          ? static_cast<double>(held.size()) * 3600 / core::to_seconds(out.makespan)
                          : 0;
  out.complete = found.complete;
  out.steps = found.steps;
  for (const mig::SearchStep& d : found.schedule) {
    out.decisions.push_back(describe(d, submitted, names, geometry));
  }
  return out;
}

}  // namespace tessera::experiment
