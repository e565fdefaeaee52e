#pragma once
// A paper's claim as data ("HP P99 latency 13x better than MPS"), and the same figure computed
// from a tessera run, so the two sit side by side and a reader sees whether the direction holds.

#include <optional>
#include <string>
#include <vector>

#include "tessera/experiment/metric.hpp"
#include "tessera/metrics/report.hpp"

namespace tessera::experiment {

// How an improvement is stated. With s the subject's value and b the baseline's:
//   kTimes:   higher-is-better s/b, lower-is-better b/s ("13x better"); better when > 1.
//   kPercent: higher-is-better (s/b - 1) x 100 ("79.2% more"), lower-is-better (1 - s/b) x 100
//             ("21.2% fewer"); better when > 0.
enum class Form { kTimes, kPercent };

struct Claim {
  std::string statement;  // what the paper says, in words
  Metric metric;
  std::string subject;  // the paper's system (a sharing mode)
  // What it is compared with. With several, the best of them by this metric (the paper's "best
  // prior system"), so the comparison is against the strongest baseline that was run.
  std::vector<std::string> baselines;
  Form form = Form::kTimes;
  double paper = 0;  // the paper's figure, in `form`
};

struct ClaimResult {
  const Claim* claim;
  // Set when both figures exist; otherwise `why_not` says what was missing.
  std::optional<double> tessera;
  std::string baseline;  // the baseline it was compared with (the best one, when several)
  std::string why_not;
  // Whether tessera's figure points the same way as the paper's (an improvement when the paper
  // reports one); false when tessera has no figure.
  bool same_direction = false;
};

// The improvement of `subject` over `baseline` by `metric` in `form` (see Form).
core::Result<double> improvement(const metrics::RunReport& report, const Metric& metric,
                                 const std::string& subject, const std::string& baseline,
                                 Form form);
// Never fails: a figure that cannot be computed is reported with the reason.
ClaimResult evaluate(const metrics::RunReport& report, const Claim& claim);
// "13x", "+79.2%": how a figure in `form` is printed.
std::string format_figure(double value, Form form);

}  // namespace tessera::experiment
