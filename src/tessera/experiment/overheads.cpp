#include "tessera/experiment/overheads.hpp"

#include <fmt/format.h>

#include "tessera/core/try.hpp"
#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::experiment {

gpu::RemapTargets RemapDrill::decide(const gpu::RemapSnapshot& snapshot) const {
  gpu::RemapTargets out;
  out.sms.assign(snapshot.tenants.size(), 0);
  int with_work = 0;
  for (const auto& t : snapshot.tenants) with_work += t.has_work ? 1 : 0;
  if (with_work == 0) {
    for (std::size_t i = 0; i < snapshot.tenants.size(); ++i) {
      out.sms[i] = snapshot.tenants[i].sms;
    }
    return out;
  }
  const auto& grid = snapshot.grid;
  const bool smaller = period_ > 0 && (snapshot.now / period_) % 2 == 1;
  const int share = grid.round(grid.usable_sms / with_work);
  const int size = smaller ? grid.round(share - grid.granularity) : share;
  for (std::size_t i = 0; i < snapshot.tenants.size(); ++i) {
    if (snapshot.tenants[i].has_work) out.sms[i] = size;
  }
  if (period_ > 0) out.revisit_at = (snapshot.now / period_ + 1) * period_;
  return out;
}

std::string drill_row(core::Nanos period) {
  return fmt::format("cogpu+remap/{:g}ms", core::to_millis(period));
}

RunFn remap_overheads(std::vector<core::Nanos> periods) {
  return [periods = std::move(periods)](
             const scenario::Scenario& s,
             const scenario::RunOptions& options) -> core::Result<metrics::RunReport> {
    scenario::Scenario drilled = s;
    for (const auto p : periods) drilled.modes.push_back(drill_row(p));
    scenario::RunOptions with_drills = options;
    with_drills.make_mode = [&periods](std::string_view mode, const gpu::ModeSettings& settings)
        -> core::Result<std::unique_ptr<gpu::SharingMode>> {
      for (const auto p : periods) {
        if (mode == drill_row(p)) {
          return std::make_unique<gpu::CoGpuMode>(settings.of<gpu::CoGpuOptions>("cogpu"),
                                                  std::make_unique<RemapDrill>(p));
        }
      }
      return gpu::make_sharing_mode(mode, settings);
    };
    return scenario::run_scenario(drilled, with_drills);
  };
}

std::string persistent_row(std::string_view row) {
  return fmt::format("persistent {}", row);
}

RunFn preemption_overheads(std::vector<core::Nanos> periods) {
  return [remaps = remap_overheads(std::move(periods))](
             const scenario::Scenario& s,
             const scenario::RunOptions& options) -> core::Result<metrics::RunReport> {
    scenario::Scenario plain = s;
    bool persistent = false;
    for (auto& t : plain.tenants) {
      persistent = persistent || t.training.persistent.has_value();
      t.training.persistent.reset();
    }
    if (!persistent) {
      return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                         "scenario '{}' has no training tenant with persistent_gemms, so nothing "
                         "can be preempted; give one (e.g. persistent_gemms: {{sms: 120}})",
                         s.name);
    }
    TESSERA_ASSIGN_OR_RETURN(auto report, remaps(plain, options));
    TESSERA_ASSIGN_OR_RETURN(auto preempted,
                             core::with_context(remaps(s, options), "with persistent kernels"));
    for (auto& row : preempted.modes) {
      row.mode = persistent_row(row.mode);
      report.modes.push_back(std::move(row));
    }
    return report;
  };
}

}  // namespace tessera::experiment
