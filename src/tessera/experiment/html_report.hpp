#pragma once
// `tessera experiment NAME --report`: an experiment that runs scenarios, as one HTML page that
// opens offline. The paper's setup, then per configuration its claims (paper | tessera | same
// direction?), the experiment's table, the run's tables and plots (scenario/html_report.hpp) and
// the model assumptions its figures rest on.

#include <string>

#include "tessera/experiment/run.hpp"

namespace tessera::experiment {

std::string format_html_report(const ExperimentResult& result);

}  // namespace tessera::experiment
