#pragma once
// A MIG run's result as JSON (the `tessera mig run` output and the mig-* experiments) and as a
// table, one row per job, for people.

#include <nlohmann/json.hpp>
#include <string>

#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/runtime/manager.hpp"

namespace tessera::mig {

// gpu, scheme, makespan_s, energy_j, jobs_per_hour, completed, oom_restarts, early_restarts,
// jobs[{name, completed, reason, submitted_s, finished_s, turnaround_s, estimated_peak_gib,
// actual_peak_gib, attempts[{profile, start, started_s, ended_s, exit, early_restart,
// iterations, predicted_peak_gib}]}], reconfigurations[{at_s, kind, destroyed[], created,
// for_job}]. Placements are written "3g.20gb@4"; `g` names the profiles.
nlohmann::json run_report_json(const MigRunResult& result, const hw::MigGeometry& g);

// Job, result, profiles tried (with restarts marked), peak estimated/actual, turnaround, then a
// summary line.
std::string run_report_table(const MigRunResult& result, const hw::MigGeometry& g);

}  // namespace tessera::mig
