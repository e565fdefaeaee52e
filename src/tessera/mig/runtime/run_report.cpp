#include "tessera/mig/runtime/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "tessera/mig/registry.hpp"

namespace tessera::mig {
namespace {

double gib(std::int64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30);
}

std::string profile_name(const hw::MigGeometry& g, int profile_id) {
  const hw::MigProfile* p = g.find(profile_id);
  return p ? p->name : fmt::format("profile {}", profile_id);
}

std::string placement_name(const hw::MigGeometry& g, const Placement& p) {
  return fmt::format("{}@{}", profile_name(g, p.profile_id), p.start);
}

// "1g.5gb oom > 2g.10gb early > 3g.20gb"
std::string attempts_text(const hw::MigGeometry& g, const JobOutcome& job) {
  std::vector<std::string> parts;
  for (const Attempt& a : job.attempts) {
    std::string part = profile_name(g, a.profile_id);
    if (a.early_restart) {
      part += " early";
    } else if (a.exit == device::JobExitKind::kOutOfMemory) {
      part += " oom";
    } else if (a.exit != device::JobExitKind::kCompleted) {
      part += fmt::format(" {}", device::to_string(a.exit));
    }
    parts.push_back(std::move(part));
  }
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " > "));
}

}  // namespace

nlohmann::json run_report_json(const MigRunResult& result, const hw::MigGeometry& g) {
  using nlohmann::json;
  json jobs = json::array();
  for (const JobOutcome& job : result.jobs) {
    json attempts = json::array();
    for (const Attempt& a : job.attempts) {
      attempts.push_back({{"profile", profile_name(g, a.profile_id)},
                          {"start", a.start},
                          {"started_s", core::to_seconds(a.started)},
                          {"ended_s", core::to_seconds(a.ended)},
                          {"exit", device::to_string(a.exit)},
                          {"early_restart", a.early_restart},
                          {"iterations", a.iterations_done},
                          {"predicted_peak_gib", gib(a.predicted_peak_bytes)},
                          {"beside", a.beside}});
    }
    jobs.push_back({{"name", job.name},
                    {"completed", job.completed},
                    {"reason", job.reason},
                    {"submitted_s", core::to_seconds(job.submitted)},
                    {"finished_s", core::to_seconds(job.finished)},
                    {"turnaround_s", core::to_seconds(job.turnaround())},
                    {"estimated_peak_gib", gib(job.estimated_peak_bytes)},
                    {"actual_peak_gib", gib(job.actual_peak_bytes)},
                    {"attempts", std::move(attempts)}});
    if (!job.resolved) jobs.back()["resolved"] = false;  // the run stopped first
  }
  json reconfigurations = json::array();
  for (const ReconfigEvent& r : result.reconfigurations) {
    json destroyed = json::array();
    for (const Placement& p : r.destroyed) destroyed.push_back(placement_name(g, p));
    json event{{"at_s", core::to_seconds(r.at)},
               {"kind", to_string(r.kind)},
               {"destroyed", std::move(destroyed)},
               {"created", placement_name(g, r.created)},
               {"for_job", r.for_job}};
    if (!r.error.empty()) event["error"] = r.error;  // `created` was asked for, not created
    reconfigurations.push_back(std::move(event));
  }
  json out{{"gpu", result.gpu},
           {"scheme", to_string(result.scheme)},
           {"makespan_s", core::to_seconds(result.makespan)},
           {"energy_j", result.energy_joules},
           {"jobs_per_hour", result.jobs_per_hour()},
           {"completed", result.completed()},
           {"oom_restarts", result.oom_restarts},
           {"early_restarts", result.early_restarts},
           {"longest_wait_s", core::to_seconds(result.longest_wait())},
           {"shared_starts", result.shared_starts},
           {"jobs", std::move(jobs)},
           {"reconfigurations", std::move(reconfigurations)}};
  if (!result.stopped.empty()) out["stopped"] = result.stopped;
  return out;
}

std::string run_report_table(const MigRunResult& result, const hw::MigGeometry& g) {
  std::size_t name_width = 3;
  std::size_t attempts_width = 8;
  for (const JobOutcome& job : result.jobs) {
    name_width = std::max(name_width, job.name.size());
    attempts_width = std::max(attempts_width, attempts_text(g, job).size());
  }
  std::string out =
      fmt::format("{:<{}}  {:<9}  {:<{}}  {:>9}  {:>9}  {:>12}\n", "job", name_width, "result",
                  "attempts", attempts_width, "est GiB", "peak GiB", "turnaround s");
  std::vector<std::string> reasons;
  std::vector<std::string> unfinished;
  for (const JobOutcome& job : result.jobs) {
    const std::string_view status = !job.resolved   ? "stopped"
                                    : job.completed ? "completed"
                                                    : "given up";
    out +=
        fmt::format("{:<{}}  {:<9}  {:<{}}  {:>9.2f}  {:>9.2f}  {:>12.1f}\n", job.name, name_width,
                    status, attempts_text(g, job), attempts_width, gib(job.estimated_peak_bytes),
                    gib(job.actual_peak_bytes), core::to_seconds(job.turnaround()));
    if (!job.resolved) {
      unfinished.push_back(job.name);
    } else if (!job.completed) {
      reasons.push_back(fmt::format("  {}: {}\n", job.name, job.reason));
    }
  }
  if (!reasons.empty()) {
    out += "given up:\n";
    for (const std::string& r : reasons) out += r;
  }
  if (!unfinished.empty()) {
    out += fmt::format("stopped ({}) before they finished: {}\n", result.stopped,
                       fmt::join(unfinished, ", "));
  }
  out += fmt::format(
      "{} on {}: {}/{} completed, makespan {:.1f} s, {:.1f} jobs/h, energy {:.0f} J, "
      "{} out-of-memory restarts, {} early restarts, {} reconfigurations, longest wait {:.1f} s\n",
      to_string(result.scheme), result.gpu, result.completed(), result.jobs.size(),
      core::to_seconds(result.makespan), result.jobs_per_hour(), result.energy_joules,
      result.oom_restarts, result.early_restarts, result.reconfigurations.size(),
      core::to_seconds(result.longest_wait()));
  if (result.shared_starts > 0) {
    out += fmt::format("{} of the starts shared an instance with a running job\n",
                       result.shared_starts);
  }
  return out;
}

}  // namespace tessera::mig
