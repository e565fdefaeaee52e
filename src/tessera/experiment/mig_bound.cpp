#include "tessera/experiment/mig_bound.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

#include "tessera/core/try.hpp"
#include "tessera/experiment/internal/mig_bound_program.hpp"

namespace tessera::experiment {
namespace {

// A way to run a unit of a job's work on a profile: it takes `s` units of time and holds `h` of
// the instance (alone: 1 and 1).
struct Point {
  double s = 1;
  double h = 1;
};

// The lower-left convex hull of `points`: s ascending, h descending, so that the least h reached
// by time factor s lies on it.
std::vector<Point> frontier(std::vector<Point> points) {
  std::ranges::sort(points, [](const Point& a, const Point& b) {
    return std::tie(a.s, a.h) < std::tie(b.s, b.h);
  });
  std::vector<Point> hull;
  for (const Point& p : points) {
    if (!hull.empty() && p.h >= hull.back().h) continue;  // slower, and holds no less
    while (hull.size() >= 2) {
      const Point& a = hull[hull.size() - 2];
      const Point& b = hull.back();
      if ((b.s - a.s) * (p.h - a.h) - (b.h - a.h) * (p.s - a.s) > 0) break;
      hull.pop_back();  // b lies on or above the segment from a to p
    }
    hull.push_back(p);
  }
  return hull;
}

// The least h on `hull` with a time factor of at most `s`; nullopt where even the fastest way is
// slower.
std::optional<double> least_hold(const std::vector<Point>& hull, double s) {
  if (hull.empty() || s < hull.front().s) return std::nullopt;
  for (std::size_t i = 0; i + 1 < hull.size(); ++i) {
    const Point& a = hull[i];
    const Point& b = hull[i + 1];
    if (s < b.s) return a.h + (b.h - a.h) * (s - a.s) / (b.s - a.s);
  }
  return hull.back().h;
}

struct Way {
  int compute_slices = 0;
  int memory_slices = 0;
  double time = 0;  // its work alone, seconds
  std::vector<Point> hull;
};

struct JobWays {
  std::string name;
  double submitted = 0;
  double ready = 0;  // the earliest its work may begin: after its submission, a create, its start
  std::vector<Way> ways;
};

// The least the job holds of a way's instance when it ends by `m`, in instance-seconds.
std::optional<double> least_held(const JobWays& job, const Way& way, double m, double start_held) {
  if (m < job.ready) return std::nullopt;
  if (way.time <= 0) return start_held;  // no work: the time factor is no constraint
  const auto h = least_hold(way.hull, (m - job.ready) / way.time);
  if (!h) return std::nullopt;
  return start_held + way.time * *h;
}

// The least m in [lo, ...) at which `fits` holds (it holds for every larger m too), from below:
// `lo` where it fits, else the largest m found not to fit, within 1e-9 of the least that does.
double least_fitting(double lo, const std::function<bool(double)>& fits) {
  if (fits(lo)) return lo;
  double step = std::max(1.0, lo);
  double hi = lo + step;
  for (int i = 0; i < 64 && !fits(hi); ++i) {
    step *= 2;
    hi = lo + step;
  }
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return lo;
}

}  // namespace

core::Result<MigBound> mig_bound(const std::vector<workload::BatchJobPtr>& jobs,
                                 const hw::MigGeometry& geometry, sim::SliceCostModel& model,
                                 const MigBoundCosts& costs, int jobs_per_instance) {
  const double start = core::to_seconds(costs.start_time);
  const double create = core::to_seconds(costs.create_time);
  const bool sharing = jobs_per_instance > 1;
  const double start_held = sharing ? 0 : start;

  // Each job's ways to run; jobs no profile holds are given up by every policy and make no
  // instance. The program gets the same times and the pairs' slowdowns.
  std::vector<const hw::MigProfile*> profiles;
  for (const hw::MigProfile& p : geometry.profiles) {
    if (!p.media_extensions) profiles.push_back(&p);
  }
  std::vector<const workload::BatchJob*> held;
  std::vector<std::int64_t> peak;  // of each held job
  for (const auto& job : jobs) {
    const std::int64_t bytes = job->memory.peak_reserved(job->iterations);
    if (std::ranges::any_of(profiles,
                            [&](const hw::MigProfile* p) { return bytes <= p->memory_bytes; })) {
      held.push_back(job.get());
      peak.push_back(bytes);
    }
  }
  std::vector<JobWays> all;
  BoundProgram program{.profiles = {},
                       .jobs = {},
                       .pairs = {},
                       .sharing = sharing,
                       .start = start,
                       .create = create,
                       .first_create = 0};
  for (const hw::MigProfile* p : profiles) {
    program.profiles.push_back(
        {.compute_slices = p->compute_slices,
         .memory_slices = p->memory_slices,
         .at_once = std::min({p->max_instances, hw::kMigComputeSlices / p->compute_slices,
                              hw::kMigMemorySlices / p->memory_slices})});
  }
  for (std::size_t a = 0; a < held.size(); ++a) {
    const workload::BatchJob& job = *held[a];
    JobWays ways{
        .name = job.name, .submitted = core::to_seconds(job.submit_time), .ready = 0, .ways = {}};
    BoundJob bound_job{.arrives = 0, .time = std::vector<std::optional<double>>(profiles.size())};
    for (std::size_t q = 0; q < profiles.size(); ++q) {
      const hw::MigProfile& p = *profiles[q];
      if (p.memory_bytes < peak[a]) continue;
      TESSERA_ASSIGN_OR_RETURN(const core::Nanos t, model.job_time(job, p));
      bound_job.time[q] = core::to_seconds(t);
      std::vector<Point> points{{1, 1}};
      for (std::size_t b = 0; b < held.size(); ++b) {
        const workload::BatchJob& other = *held[b];
        if (!sharing || b == a || peak[a] + peak[b] > p.memory_bytes) continue;
        // A pair the model cannot time never shares (the manager is told the same).
        const auto c = model.co_run(job, other, p);
        if (!c) continue;
        points.push_back({c->slowdown_a, 1 / (1 / c->slowdown_a + 1 / c->slowdown_b)});
        if (a < b) {
          program.pairs.push_back({.a = a,
                                   .b = b,
                                   .profile = q,
                                   .slowdown_a = c->slowdown_a,
                                   .slowdown_b = c->slowdown_b});
        }
      }
      ways.ways.push_back(Way{.compute_slices = p.compute_slices,
                              .memory_slices = p.memory_slices,
                              .time = core::to_seconds(t),
                              .hull = frontier(std::move(points))});
    }
    all.push_back(std::move(ways));
    program.jobs.push_back(std::move(bound_job));
  }
  const double first_submit =
      all.empty() ? 0 : std::ranges::min(all, {}, &JobWays::submitted).submitted;
  MigBound out;
  if (all.empty()) return out;

  const double open = first_submit + create;  // nothing runs before the first instance is made
  // The slice-time the holds are counted against begins there. Where starts count nothing, it
  // begins when the first job's work can: after a start on the first instance.
  const double counted_from = sharing ? open + start : open;
  double longest = 0;
  std::string longest_job;
  program.first_create = first_submit;
  for (std::size_t j = 0; j < all.size(); ++j) {
    JobWays& job = all[j];
    program.jobs[j].arrives = std::max(job.submitted, open);
    job.ready = program.jobs[j].arrives + start;
    const double fastest = std::ranges::min(job.ways, {}, &Way::time).time;
    if (job.ready + fastest > longest) {
      longest = job.ready + fastest;
      longest_job = job.name;
    }
  }

  // The jobs' least holds at makespan m, summed: of instance-time weighted by `weight` (a way's
  // compute or memory slices, or 1); infinite where a job cannot end by m.
  const auto least_sum = [&](double m, const std::function<double(const Way&)>& weight) {
    double sum = 0;
    for (const JobWays& job : all) {
      double least = std::numeric_limits<double>::infinity();
      for (const Way& way : job.ways) {
        if (const auto held = least_held(job, way, m, start_held)) {
          least = std::min(least, *held * weight(way));
        }
      }
      sum += least;
    }
    return sum;
  };
  const double compute = least_fitting(longest, [&](double m) {
    return least_sum(m, [](const Way& w) { return w.compute_slices; }) <=
           hw::kMigComputeSlices * (m - counted_from);
  });
  const double memory = least_fitting(longest, [&](double m) {
    return least_sum(m, [](const Way& w) { return w.memory_slices; }) <=
           hw::kMigMemorySlices * (m - counted_from);
  });
  const double instances = least_fitting(longest, [&](double m) {
    return least_sum(m, [](const Way&) { return 1.0; }) <=
           instance_time(counted_from - create, create, counted_from - create, m);
  });

  const double closed_form = std::max({longest, compute, memory, instances});
  const std::optional<double> interval_by_interval = least_admitted(program, closed_form);

  const std::string each =
      sharing ? "each job on the profile, alone or beside the partners, where it holds the least "
                "and still ends by then"
              : "each job on the profile where it holds the least and still ends by then";
  const std::array<std::pair<double, std::string>, 5> terms{{
      {longest, fmt::format("the job that ends last even on its fastest slice, {}", longest_job)},
      {compute, fmt::format("the jobs' compute slice-time (7 slices), {}", each)},
      {memory, fmt::format("the jobs' memory slice-time (8 slices), {}", each)},
      {instances, fmt::format("the jobs' instance-time (at most 7 instances, made one at a time), "
                              "{}",
                              each)},
      {interval_by_interval.value_or(0),
       fmt::format("the slices interval by interval (a linear program: each job's work {}, its "
                   "process start and its submission; 7 compute and 8 memory slices, each "
                   "profile's instance limit, instances made one at a time)",
                   sharing ? "alone or beside each partner" : "alone")},
  }};
  const auto& binding =
      *std::ranges::max_element(terms, {}, &std::pair<double, std::string>::first);
  // Rounded down: the bound may meet a run that is forced to it, never pass it.
  out.makespan = static_cast<core::Nanos>(std::floor(binding.first * 1e9));
  out.binding = binding.second;
  out.jobs_per_hour = static_cast<double>(all.size()) / (binding.first / 3600.0);
  return out;
}

}  // namespace tessera::experiment
