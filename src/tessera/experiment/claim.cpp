#include "tessera/experiment/claim.hpp"

#include <fmt/format.h>

#include <cmath>

#include "tessera/core/try.hpp"

namespace tessera::experiment {

namespace {

bool better(double value, Form form) {
  return form == Form::kTimes ? value > 1.0 : value > 0.0;
}

}  // namespace

core::Result<double> improvement(const metrics::RunReport& report, const Metric& metric,
                                 const std::string& subject, const std::string& baseline,
                                 Form form) {
  TESSERA_ASSIGN_OR_RETURN(const double s, metric_value(report, metric, subject));
  TESSERA_ASSIGN_OR_RETURN(const double b, metric_value(report, metric, baseline));
  const bool lower = lower_is_better(metric);
  // A zero on the side that divides makes the ratio meaningless; say which run had it.
  const double divisor = (form == Form::kTimes && lower) ? s : b;
  if (divisor <= 0) {
    return core::failf(core::Domain::kScenario, core::Code::kFailedPrecondition,
                       "{} is {} under {}, so no ratio can be formed", label(metric), divisor,
                       divisor == s ? subject : baseline);
  }
  if (form == Form::kTimes) return lower ? b / s : s / b;
  return lower ? (1.0 - s / b) * 100.0 : (s / b - 1.0) * 100.0;
}

ClaimResult evaluate(const metrics::RunReport& report, const Claim& claim) {
  ClaimResult out{.claim = &claim, .tessera = std::nullopt, .baseline = "", .why_not = ""};
  for (const auto& baseline : claim.baselines) {
    auto value = improvement(report, claim.metric, claim.subject, baseline, claim.form);
    if (!value) {
      // Every baseline named must be measurable; a best-of over fewer would flatter the subject.
      out.tessera.reset();
      out.baseline = baseline;
      out.why_not = value.error().message();
      return out;
    }
    // The best baseline is the one the subject improves on least.
    if (!out.tessera || *value < *out.tessera) {
      out.tessera = *value;
      out.baseline = baseline;
    }
  }
  if (!out.tessera) {
    out.why_not = "the claim names no baseline";
    return out;
  }
  out.same_direction = better(*out.tessera, claim.form) == better(claim.paper, claim.form);
  return out;
}

std::string format_figure(double value, Form form) {
  if (form == Form::kTimes) return fmt::format("{:.3g}x", value);
  return fmt::format("{:+.3g}%", value);
}

}  // namespace tessera::experiment
