#include "tessera/experiment/fill_frontier.hpp"

#include <fmt/format.h>

#include "tessera/core/try.hpp"
#include "tessera/gpu/modes/priority_fill/priority_fill_options.hpp"

namespace tessera::experiment {

std::string fill_row(double share) {
  return fmt::format("priority-fill {:g}", share);
}

RunFn fill_frontier(std::vector<std::string> baselines, std::vector<double> shares) {
  return [baselines = std::move(baselines), shares = std::move(shares)](
             const scenario::Scenario& s,
             const scenario::RunOptions& options) -> core::Result<metrics::RunReport> {
    scenario::Scenario base = s;
    base.modes = baselines;
    TESSERA_ASSIGN_OR_RETURN(auto report, scenario::run_scenario(base, options));
    for (const double share : shares) {
      scenario::Scenario one = s;
      one.modes = {"priority-fill"};
      one.mode_options.of<gpu::PriorityFillOptions>("priority-fill").best_effort_share = share;
      TESSERA_ASSIGN_OR_RETURN(auto run,
                               core::with_context(scenario::run_scenario(one, options),
                                                  fmt::format("best_effort_share {:g}", share)));
      run.modes.front().mode = fill_row(share);
      report.modes.push_back(std::move(run.modes.front()));
    }
    // The reserve that follows the service's SLO slack, from the smallest share up.
    scenario::Scenario guided = s;
    guided.modes = {"priority-fill"};
    auto& o = guided.mode_options.of<gpu::PriorityFillOptions>("priority-fill");
    o.best_effort_share = shares.empty() ? o.best_effort_share : shares.front();
    o.slo_guided = true;
    TESSERA_ASSIGN_OR_RETURN(
        auto run, core::with_context(scenario::run_scenario(guided, options), "slo_guided"));
    run.modes.front().mode = kSloGuidedRow;
    report.modes.push_back(std::move(run.modes.front()));
    return report;
  };
}

}  // namespace tessera::experiment
